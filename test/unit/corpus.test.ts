import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { forgetCorpora, loadCorpus } from '../../activities/corpus/corpus';
import { sampleSegments } from '../../activities/corpus/sample';
import { splitIntoSegments } from '../../activities/corpus/segment';
import { seededRng } from '../../activities/lib/rng';

const FIXTURES = path.join(__dirname, '../fixtures/corpus');
const SMALL = path.join(FIXTURES, 'small.jsonl');
const EDGE = path.join(FIXTURES, 'edge-cases.jsonl');

/** Whitespace-insensitive view: segmenting may only change whitespace at the cuts. */
const squash = (text: string): string => text.replace(/\s+/g, ' ').trim();

afterEach(() => forgetCorpora());

describe('loadCorpus', () => {
  test('keeps every fixture document and bounds every segment', async () => {
    const { segments, stats } = await loadCorpus(SMALL, { maxSegmentChars: 2000 });
    expect(stats.documents).toBe(40);
    expect(stats.skipped).toEqual({ empty: 0, binary: 0, duplicate: 0, oversized: 0, malformed: 0 });
    expect(stats.segments).toBe(segments.length);
    expect(segments.length).toBeGreaterThan(40);
    for (const s of segments) {
      expect(s.text.length).toBeGreaterThan(0);
      expect(s.text.length).toBeLessThanOrEqual(2000);
      expect(s.id).toBe(`${s.docId}#${s.index}`);
      expect(Object.keys(s.metadata).sort()).toEqual(['source', 'title', 'topic']);
      expect(s.metadata.source).toBe('generated');
    }
    expect(new Set(segments.map((s) => s.id)).size).toBe(segments.length);
  });

  test('segments of a document concatenate back to its text, cut on sentence ends', async () => {
    const docs = (await readFile(SMALL, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string; text: string });
    const { segments } = await loadCorpus(SMALL, { maxSegmentChars: 1500 });
    for (const doc of docs) {
      const own = segments.filter((s) => s.docId === doc.id);
      expect(own.map((s) => s.index)).toEqual(own.map((_, i) => i));
      expect(squash(own.map((s) => s.text).join(' '))).toBe(squash(doc.text));
      for (const s of own.slice(0, -1)) expect(s.text).toMatch(/[.!?]$/);
    }
  });

  test('the default limit keeps the small documents whole', async () => {
    const { segments, stats } = await loadCorpus(SMALL);
    expect(stats.segments).toBe(40);
    expect(segments.every((s) => s.index === 0)).toBe(true);
  });

  test('skips and counts each kind of bad line', async () => {
    const { segments, stats } = await loadCorpus(EDGE, { maxDocumentChars: 5000, maxSegmentChars: 1000 });
    expect(stats.skipped).toEqual({ empty: 2, binary: 2, duplicate: 2, oversized: 1, malformed: 5 });
    expect(stats.documents).toBe(2);
    expect(new Set(segments.map((s) => s.docId))).toEqual(new Set(['good-1', 'good-2-unpunctuated']));
    // A sentence longer than the limit is cut at whitespace, never inside a word.
    const long = segments.filter((s) => s.docId === 'good-2-unpunctuated');
    expect(long.length).toBeGreaterThan(1);
    for (const s of long) {
      expect(s.text.length).toBeLessThanOrEqual(1000);
      expect(s.text).toMatch(/^word\d+( word\d+)*$/);
    }
  });

  test('reads gzipped files and file:// URIs identically, and caches per URI and options', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'selfplay-corpus-'));
    try {
      const gz = path.join(dir, 'small.jsonl.gz');
      await writeFile(gz, gzipSync(await readFile(SMALL)));
      const plain = await loadCorpus(SMALL, { maxSegmentChars: 3000 });
      const zipped = await loadCorpus(pathToFileURL(gz).href, { maxSegmentChars: 3000 });
      expect(zipped).toEqual(plain);
      expect(await loadCorpus(SMALL, { maxSegmentChars: 3000 })).toBe(plain);
      expect(await loadCorpus(SMALL, { maxSegmentChars: 4000 })).not.toBe(plain);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a missing or corrupt file fails naming it, and is not cached', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'selfplay-corpus-'));
    try {
      const missing = path.join(dir, 'later.jsonl');
      await expect(loadCorpus(missing)).rejects.toThrow(`cannot load corpus ${missing}`);
      await writeFile(missing, '{"id":"a","text":"now it exists."}\n');
      expect((await loadCorpus(missing)).stats.documents).toBe(1);
      const corrupt = path.join(dir, 'corrupt.jsonl.gz');
      await writeFile(corrupt, 'not gzip at all');
      await expect(loadCorpus(corrupt)).rejects.toThrow(/corrupt\.jsonl\.gz: not valid gzip/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('splitIntoSegments', () => {
  test('packs paragraphs up to the limit and splits long words hard', () => {
    expect(splitIntoSegments('aa\n\nbb\n  \ncc', 6)).toEqual(['aa\n\nbb', 'cc']);
    expect(splitIntoSegments('x'.repeat(10), 4)).toEqual(['xxxx', 'xxxx', 'xx']);
    expect(splitIntoSegments('One. Two three. Four!', 10)).toEqual(['One.', 'Two three.', 'Four!']);
    expect(() => splitIntoSegments('text', 0)).toThrow(/maxSegmentChars must be a positive integer/);
  });

  test('never splits a surrogate pair', () => {
    const pieces = splitIntoSegments('😀'.repeat(5), 3);
    expect(pieces.join('')).toBe('😀'.repeat(5));
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(3);
    expect(pieces.every((p) => !/^[\udc00-\udfff]|[\ud800-\udbff]$/.test(p))).toBe(true);
  });
});

describe('sampleSegments', () => {
  const items = Array.from({ length: 100 }, (_, i) => i);

  test('the same seed parts give the same sample, other parts another', () => {
    const a = sampleSegments(items, 10, seededRng(7, 3, 'propose', 0));
    expect(sampleSegments(items, 10, seededRng(7, 3, 'propose', 0))).toEqual(a);
    expect(sampleSegments(items, 10, seededRng(7, 3, 'propose', 1))).not.toEqual(a);
  });

  test('draws without replacement up to the pool size', () => {
    const all = sampleSegments(items, 100, seededRng('all'));
    expect([...all].sort((x, y) => x - y)).toEqual(items);
    expect(new Set(sampleSegments(items, 37, seededRng('some'))).size).toBe(37);
    expect(sampleSegments(items, 0, seededRng('none'))).toEqual([]);
  });

  test('beyond the pool size every item repeats as evenly as possible', () => {
    const drawn = sampleSegments(['a', 'b', 'c'], 8, seededRng('over'));
    const counts = ['a', 'b', 'c'].map((x) => drawn.filter((d) => d === x).length).sort();
    expect(counts).toEqual([2, 3, 3]);
    expect(new Set(drawn.slice(0, 3)).size).toBe(3);
  });

  test('is roughly uniform', () => {
    const hits = new Array<number>(10).fill(0);
    const rng = seededRng('uniform');
    for (let trial = 0; trial < 2000; trial++) {
      for (const x of sampleSegments([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 3, rng)) hits[x] = (hits[x] ?? 0) + 1;
    }
    for (const h of hits) expect(h).toBeGreaterThan(500);
    for (const h of hits) expect(h).toBeLessThan(700);
  });

  test('rejects impossible requests', () => {
    expect(() => sampleSegments([], 1, seededRng('x'))).toThrow(/empty corpus/);
    expect(() => sampleSegments(items, -1, seededRng('x'))).toThrow(/non-negative integer/);
  });
});
