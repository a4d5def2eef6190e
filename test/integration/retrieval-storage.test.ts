/**
 * Search indexes in S3 (the global setup's MinIO): built by the `buildIndex` activity and by the CLI, loaded
 * by `retrieverFor`; a prefix without a manifest is never loaded.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { S3Store, writeObjectAtUri } from '../../activities/clients/storage';
import { forgetCorpora } from '../../activities/corpus/corpus';
import { INDEX_KEYS } from '../../activities/retrieval/manifest';
import { forgetRetrievers, retrieverFor } from '../../activities/retrieval/retriever';
import {
  indexActivities,
  type BuildIndexInput,
  type BuildIndexOutput,
} from '../../activities/stages/index-build';
import { loadWorkerEnv } from '../../config/env';
import { configFor } from '../support/recipe-harness';
import { SEARCH_DOCS, writeJsonl } from '../support/search-corpus';

const ROOT = path.resolve(__dirname, '../..');

const bucket = (): string => {
  const name = process.env.SELFPLAY_TEST_BUCKET;
  if (!name || !process.env.S3_ENDPOINT) throw new Error('the integration global setup did not provide S3');
  return name;
};
/** A fresh prefix per test keeps reruns against a long-lived server independent. */
// The workers may read indexes from the test bucket (SELFPLAY_INPUT_ROOTS).
const workerEnv = () => loadWorkerEnv({ SELFPLAY_INPUT_ROOTS: `s3://${bucket()}` });
const freshUri = (what: string): string => `s3://${bucket()}/it-${what}-${randomBytes(6).toString('hex')}`;
const configAt = (index: string) =>
  configFor({ recipe: 'spice', retrieval: { index, kind: 'bm25', topK: 3, passageTokens: 8 } });

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'retrieval-it-'));
});
afterEach(async () => {
  forgetCorpora();
  forgetRetrievers();
  await rm(dir, { recursive: true, force: true });
});

test('the buildIndex activity writes an index to MinIO once; retrieverFor searches it', async () => {
  const corpus = `${freshUri('corpus')}/corpus.jsonl`;
  await writeObjectAtUri(corpus, SEARCH_DOCS.map((d) => JSON.stringify(d)).join('\n'));
  const out = freshUri('index');
  const activities = indexActivities({ env: workerEnv() });
  const build = (input: BuildIndexInput): Promise<BuildIndexOutput> =>
    new MockActivityEnvironment().run<[], BuildIndexOutput, () => Promise<BuildIndexOutput>>(() =>
      activities.buildIndex(input),
    );
  const input: BuildIndexInput = { corpus, out, kind: 'bm25' };

  const first = await build(input);
  expect(first).toMatchObject({ uri: out, built: true, documents: 10, passages: 10 });
  const store = new S3Store({ bucket: bucket(), prefix: out.slice(`s3://${bucket()}/`.length) });
  expect(await store.list('')).toEqual([INDEX_KEYS.bm25, INDEX_KEYS.manifest, INDEX_KEYS.passages].sort());
  expect(await build(input)).toEqual({ ...first, built: false });

  const retriever = await retrieverFor(configAt(out), { env: workerEnv() });
  const [hit] = await retriever.search('Sicilian Defence chess opening', { topK: 3, maxTokens: 8 });
  expect(hit).toMatchObject({ id: 'chess#p0', title: 'Sicilian Defence' });
  // 8 tokens: "1.e4" is three ("1", ".", "e4").
  expect(hit?.text).toBe('The Sicilian Defence answers 1.e4 with');
});

test('a prefix whose manifest was never written fails non-retryably, naming the build command', async () => {
  const out = freshUri('half');
  await writeObjectAtUri(`${out}/${INDEX_KEYS.passages}`, 'partial');
  const err = await retrieverFor(configAt(out), { env: workerEnv() }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect((err as ApplicationFailure).nonRetryable).toBe(true);
  expect((err as ApplicationFailure).message).toContain(
    `npx selfplay index build --corpus CORPUS --out ${out}`,
  );
});

test('selfplay index build writes to MinIO and reports skipped documents; a rerun does nothing', async () => {
  const corpus = await writeJsonl(path.join(dir, 'corpus.jsonl'), [
    ...SEARCH_DOCS,
    { id: 'empty', text: '  ' },
    { id: 'volcano', text: 'a second document with a repeated id' },
  ]);
  const out = freshUri('cli');
  const cli = (): Promise<{ stdout: string }> =>
    promisify(execFile)('node', ['cli/bin.js', 'index', 'build', '--corpus', corpus, '--out', out], {
      cwd: ROOT,
      env: process.env,
    });
  const built = await cli();
  expect(built.stdout).toMatch(
    new RegExp(`^built bm25 index ${out}: 10 documents, 10 passages, skipped 1 empty, 1 duplicate`),
  );
  expect((await cli()).stdout).toContain(`${out} already holds a complete bm25 index of ${corpus}`);
  const retriever = await retrieverFor(configAt(out), { env: workerEnv() });
  expect((await retriever.search('ear-shaped pasta', { topK: 1, maxTokens: 50 }))[0]?.id).toBe('pasta#p0');
});
