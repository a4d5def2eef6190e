import { ApplicationFailure } from '@temporalio/common';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { forgetCorpora } from '../../../activities/corpus/corpus';
import { buildIndex } from '../../../activities/retrieval/build';
import { INDEX_KEYS } from '../../../activities/retrieval/manifest';
import { forgetRetrievers, loadRetriever, retrieverFor } from '../../../activities/retrieval/retriever';
import { countTokens } from '../../../activities/retrieval/tokens';
import { loadWorkerEnv } from '../../../config/env';
import { configFor } from '../../support/recipe-harness';
import { SEARCH_DOCS as DOCS, writeJsonl } from '../../support/search-corpus';

const EDGE = path.join(__dirname, '../../fixtures/corpus/edge-cases.jsonl');
const KEY = { apiKey: 'EMPTY' };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'bm25-'));
});
afterEach(async () => {
  forgetCorpora();
  forgetRetrievers();
  await rm(dir, { recursive: true, force: true });
});

/** The ApplicationFailure a promise rejects with (fails the test when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

const corpusFile = (docs: object[]): Promise<string> => writeJsonl(path.join(dir, 'corpus.jsonl'), docs);

describe('bm25 index', () => {
  test('a query naming a document’s distinct facts ranks it first', async () => {
    const out = path.join(dir, 'index');
    await buildIndex({ corpus: await corpusFile(DOCS), out, kind: 'bm25' });
    const retriever = await loadRetriever(out, KEY);
    for (const [query, id] of [
      ['which stratovolcano erupted in 1783', 'volcano'],
      ['enzyme that hydrolyses lactose', 'enzyme'],
      ['cable-stayed crossing of the Oder', 'bridge'],
      ['Playfair', 'cipher'],
    ] as const) {
      const [first, second] = await retriever.search(query, { topK: 3, maxTokens: 500 });
      expect(first?.id).toBe(`${id}#p0`);
      expect(first?.score).toBeGreaterThan(second?.score ?? 0);
    }
    const [hit] = await retriever.search('Cremona violin', { topK: 1, maxTokens: 500 });
    expect(hit).toEqual({ id: 'violin#p0', title: 'Amati workshop', text: DOCS[1]?.text, score: hit?.score });
    expect(hit?.score).toBeGreaterThan(0);
  });

  test('returns at most topK passages, best first, and nothing for a blank query', async () => {
    const out = path.join(dir, 'index');
    await buildIndex({ corpus: await corpusFile(DOCS), out, kind: 'bm25' });
    const retriever = await loadRetriever(out, KEY);
    const hits = await retriever.search('article subject interesting', { topK: 4, maxTokens: 500 });
    expect(hits).toHaveLength(4);
    const scores = hits.map((h) => h.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(await retriever.search('   ', { topK: 4, maxTokens: 500 })).toEqual([]);
    expect(await retriever.search('zzzunknownword', { topK: 4, maxTokens: 500 })).toEqual([]);
  });

  test('cuts long documents into passages and each passage to maxTokens', async () => {
    const words = Array.from({ length: 250 }, (_, i) => `w${i}`).join(' ');
    const out = path.join(dir, 'index');
    const { manifest } = await buildIndex({
      corpus: await corpusFile([{ id: 'long', title: 'Long', text: `${words} unicorn.` }]),
      out,
      kind: 'bm25',
    });
    // 251 words: windows of 100, the 51-word tail is kept as its own passage (over half a window).
    expect(manifest.passages).toBe(3);
    const retriever = await loadRetriever(out, KEY);
    const [tail] = await retriever.search('unicorn', { topK: 1, maxTokens: 10 });
    expect(tail?.id).toBe('long#p2');
    expect(tail?.text).toBe('w200 w201 w202 w203 w204 w205 w206 w207 w208 w209');
    expect(countTokens(tail?.text ?? '')).toBe(10);
    const [whole] = await retriever.search('unicorn', { topK: 1, maxTokens: 1000 });
    expect(whole?.text.endsWith('w249 unicorn.')).toBe(true);
  });

  test('skips and counts empty, huge, binary, malformed and duplicate documents', async () => {
    const out = path.join(dir, 'index');
    const { manifest } = await buildIndex({ corpus: EDGE, out, kind: 'bm25', maxDocumentChars: 5000 });
    expect(manifest.skipped).toEqual({ empty: 2, binary: 2, duplicate: 2, oversized: 1, malformed: 5 });
    expect(manifest.documents).toBe(2);
  });

  test('a second build finds the complete index and writes nothing', async () => {
    const corpus = await corpusFile(DOCS);
    const out = path.join(dir, 'index');
    const first = await buildIndex({ corpus, out, kind: 'bm25' });
    expect(first.built).toBe(true);
    const before = (await stat(path.join(out, INDEX_KEYS.bm25))).mtimeMs;
    const again = await buildIndex({ corpus, out, kind: 'bm25' });
    expect(again).toEqual({ ...first, built: false });
    expect((await stat(path.join(out, INDEX_KEYS.bm25))).mtimeMs).toBe(before);
    await expect(buildIndex({ corpus: EDGE, out, kind: 'bm25' })).rejects.toThrow(
      /already holds a bm25 index of .*corpus\.jsonl/,
    );
  });

  test('an index without its manifest is never loaded; the error names the build command', async () => {
    const out = path.join(dir, 'index');
    await buildIndex({ corpus: await corpusFile(DOCS), out, kind: 'bm25' });
    await rm(path.join(out, INDEX_KEYS.manifest));
    expect((await readdir(out)).sort()).toEqual([INDEX_KEYS.bm25, INDEX_KEYS.passages].sort());
    await expect(loadRetriever(out, KEY)).rejects.toThrow(
      /no complete search index at .*manifest\.json is missing.*selfplay index build/,
    );
  });
});

describe('retrieverFor', () => {
  // The indexes these tests build lie in the temporary directory: an input root of this worker.
  const env = loadWorkerEnv({ SELFPLAY_INPUT_ROOTS: os.tmpdir() });

  test('loads the configured index once per process', async () => {
    const out = path.join(dir, 'index');
    await buildIndex({ corpus: await corpusFile(DOCS), out, kind: 'bm25' });
    const config = configFor({
      recipe: 'spice',
      retrieval: { index: out, kind: 'bm25', topK: 3, passageTokens: 50 },
    });
    const a = await retrieverFor(config, { env });
    expect(await retrieverFor(config, { env })).toBe(a);
    expect(a.name).toBe(`bm25:${out}`);
  });

  test('refuses a missing index setting or a kind that does not match, non-retryably', async () => {
    const out = path.join(dir, 'index');
    await buildIndex({ corpus: await corpusFile(DOCS), out, kind: 'bm25' });
    const unset = configFor({ recipe: 'spice' });
    const noIndex = await rejection(retrieverFor(unset, { env }));
    expect(noIndex.nonRetryable).toBe(true);
    expect(noIndex.message).toMatch(/retrieval\.index is not set/);
    const dense = configFor({
      recipe: 'spice',
      retrieval: { index: out, kind: 'dense', topK: 3, passageTokens: 50 },
    });
    const wrongKind = await rejection(retrieverFor(dense, { env }));
    expect(wrongKind.nonRetryable).toBe(true);
    expect(wrongKind.message).toMatch(/retrieval\.kind is "dense" but .* is a bm25 index/);
  });
});
