import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { LocalStore } from '../../activities/clients/storage';
import { forgetCorpora, loadCorpus } from '../../activities/corpus/corpus';
import { withoutDocuments } from '../../activities/corpus/exclude';
import { sampleIndices, sampleSegments } from '../../activities/corpus/sample';
import { segmentIndexFor, type BuildProgress } from '../../activities/corpus/segment-index';
import { indexedSegments, inMemorySegments } from '../../activities/corpus/segment-source';
import { seededRng, shuffledRange } from '../../activities/lib/rng';
import { planSpice } from '../../activities/recipes/spice/plan';
import { configFor } from '../support/recipe-harness';

const FIXTURES = path.join(__dirname, '../fixtures/corpus');
const OPTIONS = { maxSegmentChars: 300, maxDocumentChars: 5000 };

let dir: string;
let store: LocalStore;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'segment-index-'));
  store = new LocalStore(path.join(dir, 'storage'));
});
afterEach(async () => {
  forgetCorpora();
  await rm(dir, { recursive: true, force: true });
});

/** Every fixture line, twice over under other ids (so a few chunks fill), plus the edge cases. */
async function writeCorpus(name: string): Promise<string> {
  const small = (await readFile(path.join(FIXTURES, 'small.jsonl'), 'utf8')).trim().split('\n');
  const copies = small.map((line) => {
    const doc = JSON.parse(line) as { id: string; text: string };
    return JSON.stringify({ ...doc, id: `copy-${doc.id}`, text: `${doc.text} (copy)` });
  });
  const edge = await readFile(path.join(FIXTURES, 'edge-cases.jsonl'), 'utf8');
  const text = `${[...small, ...copies].join('\n')}\n${edge}`;
  const file = path.join(dir, name);
  await writeFile(file, name.endsWith('.gz') ? gzipSync(text) : text);
  return file;
}

describe('segment index', () => {
  test.each(['corpus.jsonl', 'corpus.jsonl.gz'])(
    'holds exactly the segments and stats loadCorpus gives (%s), across chunks',
    async (name) => {
      const uri = await writeCorpus(name);
      const progress: BuildProgress = { documents: 0, segments: 0, chunks: 0 };
      const index = await segmentIndexFor(store, uri, OPTIONS, { chunkBytes: 4096, progress });
      const corpus = await loadCorpus(uri, OPTIONS);
      expect(index.manifest.stats).toEqual(corpus.stats);
      expect(index.manifest.chunks.length).toBeGreaterThan(3);
      expect(progress).toEqual({
        documents: corpus.stats.documents,
        segments: corpus.segments.length,
        chunks: index.manifest.chunks.length,
      });
      const all = corpus.segments.map((_, i) => i);
      expect(await index.read(all)).toEqual(corpus.segments);
      const some = [7, 0, corpus.segments.length - 1, 7];
      expect(await index.read(some)).toEqual(some.map((i) => corpus.segments[i]));
      await expect(index.read([corpus.segments.length])).rejects.toThrow(/outside the corpus's \d+ segments/);
    },
  );

  test('is built once per corpus version and options, and rebuilt when the corpus changes', async () => {
    const uri = await writeCorpus('corpus.jsonl');
    const first = await segmentIndexFor(store, uri, OPTIONS);
    const again = await segmentIndexFor(store, uri, OPTIONS);
    expect(again.prefix).toBe(first.prefix);
    expect(again.manifest).toEqual(first.manifest);
    const other = await segmentIndexFor(store, uri, { ...OPTIONS, maxSegmentChars: 500 });
    expect(other.prefix).not.toBe(first.prefix);
    await writeFile(uri, '{"id":"only","text":"One document now."}\n');
    const changed = await segmentIndexFor(store, uri, OPTIONS);
    expect(changed.prefix).not.toBe(first.prefix);
    expect(await changed.read([0])).toEqual([
      { id: 'only#0', docId: 'only', index: 0, text: 'One document now.', metadata: {} },
    ]);
  });

  test('a missing corpus, a corrupt gzip and a damaged index fail naming them', async () => {
    await expect(segmentIndexFor(store, path.join(dir, 'none.jsonl'), OPTIONS)).rejects.toThrow(
      /no object at .*none\.jsonl/,
    );
    const corrupt = path.join(dir, 'corrupt.jsonl.gz');
    await writeFile(corrupt, 'not gzip at all');
    await expect(segmentIndexFor(store, corrupt, OPTIONS)).rejects.toThrow(
      /corrupt\.jsonl\.gz is not valid gzip/,
    );
    const index = await segmentIndexFor(store, await writeCorpus('corpus.jsonl'), OPTIONS);
    await store.delete(`${index.prefix}/chunk-000000.offsets`);
    await expect(index.read([0])).rejects.toThrow(/segment index .* is damaged: .*chunk-000000\.offsets/);
  });

  test('excluded documents are left out exactly as withoutDocuments leaves them out', async () => {
    const uri = await writeCorpus('corpus.jsonl');
    const index = await segmentIndexFor(store, uri, OPTIONS, { chunkBytes: 2048 });
    const corpus = await loadCorpus(uri, OPTIONS);
    const docIds = [...new Set(corpus.segments.map((s) => s.docId))];
    const excluded = new Set([
      docIds[0] as string,
      docIds[3] as string,
      docIds.at(-1) as string,
      'not-there',
    ]);
    const expected = withoutDocuments(corpus, excluded);
    const source = await indexedSegments(index, excluded);
    expect(source.count).toBe(expected.segments.length);
    expect(source.stats).toEqual(expected.stats);
    expect(await source.read(expected.segments.map((_, p) => p))).toEqual(expected.segments);
    await expect(source.read([source.count])).rejects.toThrow(/usable segments/);
  });

  test('a plan samples the same segments from the index as from the corpus in memory', async () => {
    const uri = await writeCorpus('corpus.jsonl.gz');
    const config = configFor({ recipe: 'spice', batchSize: 12, corpus: { uri, ...OPTIONS } });
    const corpus = await loadCorpus(uri, OPTIONS);
    const index = await segmentIndexFor(store, uri, OPTIONS, { chunkBytes: 4096 });
    const plan = (segments: () => Promise<ReturnType<typeof inMemorySegments>>) =>
      planSpice({
        config,
        runId: 'r',
        iteration: 4,
        state: undefined,
        corpus: () => Promise.resolve(corpus),
        segments,
      });
    const fromIndex = await plan(() => indexedSegments(index, new Set()));
    expect(fromIndex).toEqual(await plan(() => Promise.resolve(inMemorySegments(corpus))));
    const drawn = sampleSegments(corpus.segments, 12, seededRng(config.seed, 4, 'plan'));
    expect(fromIndex.map((u) => u.segmentId)).toEqual(drawn.map((s) => s.id));
  });
});

describe('positions', () => {
  test('sampleIndices draws the positions sampleSegments draws', () => {
    const items = Array.from({ length: 50 }, (_, i) => `s${i}`);
    const positions = sampleIndices(50, 120, seededRng('p'));
    expect(positions.map((i) => items[i])).toEqual(sampleSegments(items, 120, seededRng('p')));
  });

  test('shuffledRange is the permutation rng.shuffle applies', () => {
    const items = Array.from({ length: 1000 }, (_, i) => i * 3);
    const order = shuffledRange(seededRng('s'), 1000);
    expect(Array.from(order, (i) => items[i])).toEqual(seededRng('s').shuffle(items));
    expect(new Set(order).size).toBe(1000);
  });
});
