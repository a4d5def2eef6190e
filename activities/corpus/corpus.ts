import { readInputRecords, type InputRecord } from '../lib/input-records';
import { fingerprint, FingerprintSet } from './fingerprints';
import { splitIntoSegments } from './segment';

/** A passage a proposer grounds tasks in. */
export interface CorpusSegment {
  /** `{docId}#{k}`: stable across loads of the same document, so tasks can cite their source. */
  id: string;
  docId: string;
  /** k, the segment's position in its document. */
  index: number;
  text: string;
  /** The document's other fields (title, source, ...), shared by its segments. */
  metadata: Record<string, unknown>;
}

export interface CorpusStats {
  /** Documents kept. */
  documents: number;
  segments: number;
  skipped: {
    empty: number;
    binary: number;
    duplicate: number;
    oversized: number;
    malformed: number;
    /** Documents left out by `corpus.excludeDocIds` (see exclude.ts). */
    excluded?: number;
  };
}

export interface Corpus {
  segments: CorpusSegment[];
  stats: CorpusStats;
}

export interface CorpusOptions {
  /** Upper bound per segment; 24,000 chars is about 6k tokens. */
  maxSegmentChars?: number;
  /** Documents longer than this are skipped as oversized. */
  maxDocumentChars?: number;
  /** The file's columns for `id` and `text` where they have other names (`corpus.columns`). */
  columns?: CorpusColumns;
}

/** The options an index is built with: both limits given, columns when the file's names differ. */
export type IndexedCorpusOptions = Required<Omit<CorpusOptions, 'columns'>> & Pick<CorpusOptions, 'columns'>;

export type CorpusColumns = Partial<Record<'id' | 'text', string>>;

const DEFAULTS = { maxSegmentChars: 24_000, maxDocumentChars: 2_000_000 };

/** Share of control / replacement characters above which text is treated as decoded binary. */
const BINARY_CHAR_RATIO = 0.05;

const cache = new Map<string, Promise<Corpus>>();

/**
 * Loads a corpus (`{"id", "text", ...metadata}` per record: JSONL, plain, `.gz` or `.zst`, or Parquet; see
 * input-records.ts) from a local path, a `file://` URI or an `s3://` URI, every segment in memory. Cached per URI and options, so a worker
 * reads a corpus once however many activities use it; a failed load is not cached. For what needs every
 * segment (SPELL's clusters, a search index); a plan that samples a few goes through the corpus's segment index
 * (segment-index.ts) instead.
 */
export function loadCorpus(uri: string, options: CorpusOptions = {}): Promise<Corpus> {
  const resolved = { ...DEFAULTS, ...options };
  const cacheKey = JSON.stringify([
    uri,
    resolved.maxSegmentChars,
    resolved.maxDocumentChars,
    resolved.columns,
  ]);
  let loading = cache.get(cacheKey);
  if (!loading) {
    loading = readCorpus(corpusRecords(uri, resolved.columns), resolved).catch((err: unknown) => {
      cache.delete(cacheKey);
      throw corpusError(uri, err);
    });
    cache.set(cacheKey, loading);
  }
  return loading;
}

/** Drops cached corpora, e.g. after the files behind a URI changed. */
export function forgetCorpora(): void {
  cache.clear();
}

/** A failure to read the corpus at `uri`, saying so (and that it is not gzip, when that is why). */
export function corpusError(uri: string, err: unknown): Error {
  const cause = (err as { cause?: unknown }).cause ?? err;
  const isZlib = String((cause as NodeJS.ErrnoException).code).startsWith('Z_');
  const message =
    (isZlib ? cause : err) instanceof Error ? ((isZlib ? cause : err) as Error).message : String(err);
  return new Error(`cannot load corpus ${uri}: ${isZlib ? `not valid gzip (${message})` : message}`, {
    cause: err,
  });
}

/** Every segment of the corpus, with its stats; see `segmentsOf`. */
export async function readCorpus(
  source: AsyncIterable<InputRecord>,
  options: CorpusOptions = {},
): Promise<Corpus> {
  const stats = emptyStats();
  const segments: CorpusSegment[] = [];
  for await (const segment of segmentsOf(source, options, stats)) segments.push(segment);
  return { segments, stats };
}

export function emptyStats(): CorpusStats {
  return {
    documents: 0,
    segments: 0,
    skipped: { empty: 0, binary: 0, duplicate: 0, oversized: 0, malformed: 0 },
  };
}

/**
 * Filters and segments documents one record at a time, yielding segments in corpus order and counting into
 * `stats` as it goes. Skipped documents are counted, never fatal: malformed records (bad JSON, missing string
 * id/text), empty or whitespace-only text, oversized text, binary-looking text, and duplicates (same normalised
 * text, or an id seen before, since segment ids must be unique). Memory beyond one document: two fingerprints
 * per document kept (fingerprints.ts).
 */
export async function* segmentsOf(
  source: AsyncIterable<InputRecord>,
  options: CorpusOptions,
  stats: CorpusStats,
): AsyncGenerator<CorpusSegment> {
  const { maxSegmentChars, maxDocumentChars } = { ...DEFAULTS, ...options };
  const { skipped } = stats;
  const seenIds = new FingerprintSet();
  const seenTexts = new FingerprintSet();
  for await (const record of source) {
    const doc = documentOf(record);
    if (!doc) skipped.malformed++;
    else if (doc.text.trim() === '') skipped.empty++;
    else if (doc.text.length > maxDocumentChars) skipped.oversized++;
    else if (looksBinary(doc.text)) skipped.binary++;
    else {
      const id = fingerprint(doc.id);
      const text = fingerprint(normalised(doc.text));
      if (seenIds.has(id) || seenTexts.has(text)) {
        skipped.duplicate++;
        continue;
      }
      seenIds.add(id);
      seenTexts.add(text);
      stats.documents++;
      const pieces = splitIntoSegments(doc.text, maxSegmentChars);
      stats.segments += pieces.length;
      for (const [index, text] of pieces.entries()) {
        yield { id: `${doc.id}#${index}`, docId: doc.id, index, text, metadata: doc.metadata };
      }
    }
  }
}

function documentOf(
  record: InputRecord,
): { id: string; text: string; metadata: Record<string, unknown> } | undefined {
  if (!('row' in record)) return undefined;
  const { id, text, ...metadata } = record.row;
  if (typeof id !== 'string' || id.trim() === '' || typeof text !== 'string') return undefined;
  return { id, text, metadata };
}

function looksBinary(text: string): boolean {
  if (text.includes('\u0000')) return true;
  let suspicious = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) || c === 0x7f || c === 0xfffd) suspicious++;
  }
  return suspicious / text.length > BINARY_CHAR_RATIO;
}

/** Case, Unicode form and whitespace differences do not make a document new. */
function normalised(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
}

/** The corpus's records, streamed from a local file or S3: one is held at a time. */
export const corpusRecords = (uri: string, columns: CorpusColumns = {}): AsyncGenerator<InputRecord> =>
  readInputRecords(uri, { columns, required: ['id', 'text'], columnsAt: 'corpus.columns' });
