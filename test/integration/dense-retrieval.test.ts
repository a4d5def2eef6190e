/**
 * Dense search end to end: the kernel's `embed` process with the real all-MiniLM-L6-v2, a dense index built
 * through it, and queries that share no word with the passage they should find.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { forgetCorpora } from '../../activities/corpus/corpus';
import { buildIndex } from '../../activities/retrieval/build';
import { DEFAULT_EMBEDDING_MODEL } from '../../activities/retrieval/embeddings';
import { INDEX_KEYS } from '../../activities/retrieval/manifest';
import { forgetRetrievers, retrieverFor } from '../../activities/retrieval/retriever';
import { loadWorkerEnv } from '../../config/env';
import { freePort } from '../support/free-port';
import { kernelToken, startEmbeddingServer, type KernelProcess } from '../support/kernel-process';
import { configFor } from '../support/recipe-harness';
import { SEARCH_DOCS, writeJsonl } from '../support/search-corpus';

/**
 * The embedding server wants the session's kernel token, which run configs name by `apiKeyEnv` and the worker
 * binds to the servers given (the session's embedding server by default); the indexes lie in the temporary
 * directory, an input root.
 */
const envFor = (...servers: string[]) =>
  loadWorkerEnv({
    SELFPLAY_KERNEL_TOKEN: kernelToken(),
    SELFPLAY_CREDENTIAL_BINDINGS: `SELFPLAY_KERNEL_TOKEN=${[server.url, ...servers].join(',')}`,
    SELFPLAY_INPUT_ROOTS: os.tmpdir(),
  });
const KEY = { apiKeyEnv: 'SELFPLAY_KERNEL_TOKEN' };
let server: KernelProcess;
let dir: string;
let index: string;

beforeAll(async () => {
  server = await startEmbeddingServer();
  dir = await mkdtemp(path.join(os.tmpdir(), 'dense-'));
  index = path.join(dir, 'index');
  const corpus = await writeJsonl(path.join(dir, 'corpus.jsonl'), SEARCH_DOCS);
  await buildIndex({
    corpus,
    out: index,
    kind: 'dense',
    embedding: { baseUrl: `${server.url}/v1`, model: DEFAULT_EMBEDDING_MODEL, apiKey: kernelToken() },
  });
});
afterAll(async () => {
  forgetCorpora();
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});
afterEach(() => forgetRetrievers());

const denseConfig = (embedding?: object) =>
  configFor({
    recipe: 'spice',
    retrieval: { index, kind: 'dense', topK: 3, passageTokens: 100, embedding: { ...KEY, ...embedding } },
  });

async function rejection(promise: Promise<unknown>): Promise<Error> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Error);
  return err as Error;
}

test('stores one unit-length float32 row of 384 values per passage', async () => {
  const manifest = JSON.parse(await readFile(path.join(index, INDEX_KEYS.manifest), 'utf8')) as {
    passages: number;
    embedding: { model: string; dimensions: number };
  };
  expect(manifest.embedding).toMatchObject({ model: DEFAULT_EMBEDDING_MODEL, dimensions: 384 });
  const bytes = await readFile(path.join(index, INDEX_KEYS.vectors));
  expect(bytes.length).toBe(manifest.passages * 384 * 4);
  let norm = 0;
  for (let i = 0; i < 384; i++) norm += bytes.readFloatLE(i * 4) ** 2;
  expect(Math.sqrt(norm)).toBeCloseTo(1, 4);
});

test('finds passages by meaning: paraphrased queries rank the right document first', async () => {
  // The manifest's embedding server is used when the config names none.
  const retriever = await retrieverFor(denseConfig(), { env: envFor() });
  expect(retriever.name).toBe(`dense:${index}`);
  for (const [query, id] of [
    ['a mountain that spewed molten rock long ago', 'volcano'],
    ['digesting the sugar found in milk', 'enzyme'],
    ['secret writing that swaps pairs of characters', 'cipher'],
    ['a stage work sung in Venice', 'opera'],
  ] as const) {
    const hits = await retriever.search(query, { topK: 3, maxTokens: 100 });
    expect(hits).toHaveLength(3);
    expect(hits[0]?.id).toBe(`${id}#p0`);
    expect(hits[0]?.score).toBeGreaterThan(hits[1]?.score ?? 1);
  }
});

test('an unreachable embedding server fails the search retryably, naming how to start one', async () => {
  const baseUrl = `http://127.0.0.1:${await freePort()}/v1`;
  const retriever = await retrieverFor(denseConfig({ baseUrl }), { env: envFor(baseUrl) });
  const err = await rejection(retriever.search('volcano', { topK: 3, maxTokens: 100 }));
  expect(err).not.toBeInstanceOf(ApplicationFailure);
  expect(err.message).toContain(`embedding server ${baseUrl} is unreachable`);
  expect(err.message).toContain('python -m selfplay_kernel embed');
});

test('a model other than the index’s is refused non-retryably, at load and by the server', async () => {
  const mismatch = await rejection(retrieverFor(denseConfig({ model: 'e5-base-v2' }), { env: envFor() }));
  expect((mismatch as ApplicationFailure).nonRetryable).toBe(true);
  expect(mismatch.message).toMatch(/"e5-base-v2" but index .* was embedded with "all-MiniLM-L6-v2"/);

  const refused = await rejection(
    buildIndex({
      corpus: path.join(dir, 'corpus.jsonl'),
      out: path.join(dir, 'other'),
      kind: 'dense',
      embedding: { baseUrl: `${server.url}/v1`, model: 'e5-base-v2', apiKey: kernelToken() },
    }),
  );
  expect((refused as ApplicationFailure).nonRetryable).toBe(true);
  expect(refused.message).toContain('rejected the request for model "e5-base-v2" (HTTP 404');
});
