import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzipSync, gzip } from 'node:zlib';
import type { ObjectStore, ObjectVersion } from '../clients/storage';
import { objectAtUri } from '../clients/storage';
import { encodeJsonl, getJson, jsonlValues, putJson } from '../clients/storage/codec';
import { corpusIndexPrefix } from '../clients/storage/keys';
import { forEachLimited } from '../lib/concurrency';
import { PermanentReadError } from '../lib/errors';
import {
  corpusRecords,
  emptyStats,
  segmentsOf,
  type IndexedCorpusOptions,
  type CorpusSegment,
  type CorpusStats,
} from './corpus';
import { Readable } from 'node:stream';

/**
 * A corpus's segment index: the corpus read once (any size, any format input-records.ts reads, local or S3), filtered and cut
 * into segments exactly as `loadCorpus` does, and stored in the data plane under `corpora/{id}/` so that a plan
 * reads only the segments it samples:
 *
 *   manifest.json                 source, its version, options, stats, and the chunks (written last: an index
 *                                 without one is incomplete and is rebuilt)
 *   chunk-000000.jsonl.gz         segments in corpus order, each its own gzip member holding one JSON line
 *                                 (`CorpusSegment`); the whole chunk also reads as ordinary .jsonl.gz
 *   chunk-000000.offsets          the members' byte offsets: (segments + 1) little-endian uint32
 *   chunk-000000.docs.jsonl.gz    `[docId, firstSegment, segments]` of each document, for exclusions
 *
 * Why a stored copy rather than offsets into the source: gzip cannot be entered in the middle, so a .jsonl.gz
 * source has no byte offset for its n-th line, and a segment is a piece of a line anyway. Members compressed one
 * by one keep the copy about the size of a gzipped corpus, and a segment is one ranged read plus one small
 * gunzip, the same for every source. The id hashes the source URI, its size and ETag (or mtime), the format and
 * the segmentation options (and the column names, when given), so a changed corpus or other options build a new index; building twice at once
 * writes the same objects.
 */
export const INDEX_FORMAT = 1;

const gzipAsync = promisify(gzip);

/** A chunk is closed, between documents, once its segments' JSON passes this (64 MiB by default). */
export const CHUNK_BYTES = 64 * 1024 * 1024;
const READ_CONCURRENCY = 32;

export interface SegmentIndexManifest {
  v: typeof INDEX_FORMAT;
  source: string;
  sourceVersion: ObjectVersion;
  options: IndexedCorpusOptions;
  stats: CorpusStats;
  /** Chunks in order; chunk k holds segments firstSegment .. firstSegment + segments - 1. */
  chunks: Array<{ firstSegment: number; segments: number; bytes: number }>;
  buildSeconds: number;
}

/** Progress of a build, for heartbeats. */
export interface BuildProgress {
  documents: number;
  segments: number;
  chunks: number;
}

export interface IndexBuildOptions {
  /** Filled in as the build goes (a heartbeat reads it). */
  progress?: BuildProgress;
  chunkBytes?: number;
}

const chunkName = (k: number): string => `chunk-${String(k).padStart(6, '0')}`;

/** The index of `uri` with these options: the stored one if complete and current, else built now. */
export async function segmentIndexFor(
  store: ObjectStore,
  uri: string,
  options: IndexedCorpusOptions,
  build: IndexBuildOptions = {},
): Promise<SegmentIndex> {
  const { store: source, key } = objectAtUri(uri);
  const version = await source.stat(key);
  if (!version) throw new PermanentReadError(`no object at ${uri}: no such file or key`);
  const prefix = corpusIndexPrefix(indexId(uri, version, options));
  const stored = await getJson<SegmentIndexManifest>(store, `${prefix}/manifest.json`);
  if (stored?.v === INDEX_FORMAT) return new SegmentIndex(store, prefix, stored);
  const manifest = await buildSegmentIndex(store, prefix, uri, version, options, {
    progress: build.progress ?? { documents: 0, segments: 0, chunks: 0 },
    chunkBytes: build.chunkBytes ?? CHUNK_BYTES,
  });
  return new SegmentIndex(store, prefix, manifest);
}

function indexId(uri: string, version: ObjectVersion, options: IndexedCorpusOptions): string {
  const parts = [
    INDEX_FORMAT,
    uri,
    version.size,
    version.tag,
    options.maxSegmentChars,
    options.maxDocumentChars,
    // Only when set, so the indexes built before columns could be named keep their ids.
    ...(options.columns && Object.keys(options.columns).length > 0 ? [options.columns] : []),
  ];
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 32);
}

async function buildSegmentIndex(
  store: ObjectStore,
  prefix: string,
  uri: string,
  sourceVersion: ObjectVersion,
  options: IndexedCorpusOptions,
  { progress, chunkBytes }: Required<IndexBuildOptions>,
): Promise<SegmentIndexManifest> {
  const t0 = Date.now();
  const stats = emptyStats();
  const chunks: SegmentIndexManifest['chunks'] = [];
  // Segments are compressed on zlib's thread pool while the next are parsed; a chunk waits for its own.
  let members: Array<Promise<Buffer>> = [];
  let chunkChars = 0;
  let docs: Array<[string, number, number]> = [];
  let firstSegment = 0;
  let segment = 0;

  const flush = async (): Promise<void> => {
    const name = `${prefix}/${chunkName(chunks.length)}`;
    const compressed = await Promise.all(members);
    const offsets = new Uint32Array(compressed.length + 1);
    compressed.forEach((m, i) => (offsets[i + 1] = (offsets[i] as number) + m.length));
    const body = Buffer.concat(compressed);
    await store.put(`${name}.jsonl.gz`, body);
    await store.put(`${name}.offsets`, Buffer.from(offsets.buffer));
    await store.put(`${name}.docs.jsonl.gz`, await encodeJsonl(docs, true, (i) => `document ${i}`));
    chunks.push({ firstSegment, segments: segment - firstSegment, bytes: body.length });
    progress.chunks = chunks.length;
    [members, chunkChars, docs, firstSegment] = [[], 0, [], segment];
  };

  let doc: [string, number, number] | undefined;
  for await (const s of segmentsOf(corpusRecords(uri, options.columns), options, stats)) {
    if (s.index === 0) {
      // Chunks close between documents, so a document's segments never straddle two.
      if (chunkChars >= chunkBytes) await flush();
      doc = [s.docId, segment, 0];
      docs.push(doc);
    }
    const line = `${JSON.stringify(s)}\n`;
    members.push(gzipAsync(line));
    chunkChars += line.length;
    (doc as [string, number, number])[2]++;
    segment++;
    progress.documents = stats.documents;
    progress.segments = segment;
  }
  if (segment > firstSegment || chunks.length === 0) await flush();
  const manifest: SegmentIndexManifest = {
    v: INDEX_FORMAT,
    source: uri,
    sourceVersion,
    options,
    stats,
    chunks,
    buildSeconds: (Date.now() - t0) / 1000,
  };
  await putJson(store, `${prefix}/manifest.json`, manifest);
  return manifest;
}

/** A stored index: reads given segments, and lists documents, without reading the rest. */
export class SegmentIndex {
  constructor(
    private readonly store: ObjectStore,
    readonly prefix: string,
    readonly manifest: SegmentIndexManifest,
  ) {}

  get count(): number {
    return this.manifest.stats.segments;
  }

  /** The segments at these corpus positions (0 ≤ i < count), in the order asked; repeats allowed. */
  async read(indices: readonly number[]): Promise<CorpusSegment[]> {
    const byChunk = new Map<number, number[]>();
    for (const i of indices) {
      if (!Number.isInteger(i) || i < 0 || i >= this.count) {
        throw new RangeError(`segment ${i} is outside the corpus's ${this.count} segments`);
      }
      const k = this.chunkOf(i);
      byChunk.set(k, [...(byChunk.get(k) ?? []), i]);
    }
    const ranges = new Map<number, [chunk: number, start: number, end: number]>();
    await forEachLimited([...byChunk.keys()], READ_CONCURRENCY, async (k) => {
      const offsets = await this.offsets(k);
      const first = this.manifest.chunks[k]!.firstSegment;
      for (const i of byChunk.get(k)!) ranges.set(i, [k, offsets[i - first]!, offsets[i - first + 1]!]);
    });
    const unique = [...ranges.keys()];
    const segments = new Map<number, CorpusSegment>();
    await forEachLimited(unique, READ_CONCURRENCY, async (i) => {
      const [k, start, end] = ranges.get(i)!;
      const key = `${this.prefix}/${chunkName(k)}.jsonl.gz`;
      const member = await this.store.getRange(key, start, end);
      if (!member || member.length !== end - start) throw this.damaged(`${key} is shorter than its offsets`);
      segments.set(i, JSON.parse(gunzipSync(member).toString('utf8')) as CorpusSegment);
    });
    return indices.map((i) => segments.get(i)!);
  }

  /** Every document with its segments, `[docId, firstSegment, segments]`, in corpus order, streamed. */
  async *documents(): AsyncGenerator<[string, number, number]> {
    for (let k = 0; k < this.manifest.chunks.length; k++) {
      const key = `${this.prefix}/${chunkName(k)}.docs.jsonl.gz`;
      const body = await this.store.get(key);
      if (!body) throw this.damaged(`${key} is missing`);
      for await (const doc of jsonlValues(Readable.from([body]), 'gzip', this.store.uri(key))) {
        yield doc as [string, number, number];
      }
    }
  }

  private chunkOf(i: number): number {
    const { chunks } = this.manifest;
    let [lo, hi] = [0, chunks.length - 1];
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (chunks[mid]!.firstSegment <= i) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  private async offsets(k: number): Promise<Uint32Array> {
    const key = `${this.prefix}/${chunkName(k)}.offsets`;
    const bytes = await this.store.get(key);
    const want = (this.manifest.chunks[k]!.segments + 1) * 4;
    if (!bytes || bytes.length !== want) throw this.damaged(`${key} does not hold ${want / 4} offsets`);
    return new Uint32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  }

  private damaged(what: string): Error {
    return new Error(
      `segment index ${this.store.uri(this.prefix)} of ${this.manifest.source} is damaged: ${what}`,
    );
  }
}
