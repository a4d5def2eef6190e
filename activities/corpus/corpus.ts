import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { PassThrough, pipeline, Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { createGunzip } from 'node:zlib';
import { readObjectAtUri } from '../clients/storage';
import { splitIntoSegments } from './segment';

/** A passage a proposer grounds tasks in. */
export interface CorpusSegment {
  /** `{docId}#{k}`: stable across loads of the same document, so tasks can cite their source. */
  id: string;
  docId: string;
  /** k, the segment's position in its document. */
  index: number;
  text: string;
  /** The document's other JSONL fields (title, source, ...), shared by its segments. */
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
}

const DEFAULTS = { maxSegmentChars: 24_000, maxDocumentChars: 2_000_000 };

/** Share of control / replacement characters above which text is treated as decoded binary. */
const BINARY_CHAR_RATIO = 0.05;

const cache = new Map<string, Promise<Corpus>>();

/**
 * Loads a JSONL corpus (`{"id", "text", ...metadata}` per line; gzipped when the name ends in `.gz`) from a
 * local path, a `file://` URI or an `s3://` URI. Cached per URI and options, so a worker reads a corpus once
 * however many activities sample from it; a failed load is not cached.
 */
export function loadCorpus(uri: string, options: CorpusOptions = {}): Promise<Corpus> {
  const resolved = { ...DEFAULTS, ...options };
  const cacheKey = `${uri}|${resolved.maxSegmentChars}|${resolved.maxDocumentChars}`;
  let loading = cache.get(cacheKey);
  if (!loading) {
    loading = readCorpus(lines(uri), resolved).catch((err: unknown) => {
      cache.delete(cacheKey);
      const message = err instanceof Error ? err.message : String(err);
      const isZlib = String((err as NodeJS.ErrnoException).code).startsWith('Z_');
      throw new Error(`cannot load corpus ${uri}: ${isZlib ? `not valid gzip (${message})` : message}`, {
        cause: err,
      });
    });
    cache.set(cacheKey, loading);
  }
  return loading;
}

/** Drops cached corpora, e.g. after the files behind a URI changed. */
export function forgetCorpora(): void {
  cache.clear();
}

/**
 * Parses, filters and segments documents one line at a time. Skipped documents are counted, never fatal:
 * malformed lines (bad JSON, missing string id/text), empty or whitespace-only text, oversized text,
 * binary-looking text, and duplicates (same normalised text, or an id seen before, since segment ids must
 * be unique). Blank lines are ignored without counting.
 */
export async function readCorpus(
  source: AsyncIterable<string>,
  options: CorpusOptions = {},
): Promise<Corpus> {
  const { maxSegmentChars, maxDocumentChars } = { ...DEFAULTS, ...options };
  const skipped = { empty: 0, binary: 0, duplicate: 0, oversized: 0, malformed: 0 };
  const seenIds = new Set<string>();
  const seenTexts = new Set<string>();
  const segments: CorpusSegment[] = [];
  let documents = 0;
  for await (const line of source) {
    if (line.trim() === '') continue;
    const doc = parseDocument(line);
    if (!doc) skipped.malformed++;
    else if (doc.text.trim() === '') skipped.empty++;
    else if (doc.text.length > maxDocumentChars) skipped.oversized++;
    else if (looksBinary(doc.text)) skipped.binary++;
    else {
      const hash = textHash(doc.text);
      if (seenIds.has(doc.id) || seenTexts.has(hash)) {
        skipped.duplicate++;
        continue;
      }
      seenIds.add(doc.id);
      seenTexts.add(hash);
      documents++;
      splitIntoSegments(doc.text, maxSegmentChars).forEach((text, index) =>
        segments.push({ id: `${doc.id}#${index}`, docId: doc.id, index, text, metadata: doc.metadata }),
      );
    }
  }
  return { segments, stats: { documents, segments: segments.length, skipped } };
}

function parseDocument(
  line: string,
): { id: string; text: string; metadata: Record<string, unknown> } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { id, text, ...metadata } = value as Record<string, unknown>;
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
function textHash(text: string): string {
  const normalised = text.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
  return createHash('sha256').update(normalised).digest('base64');
}

/** The corpus's lines, streamed (and gunzipped) so only one line is held at a time beyond the raw object. */
function lines(uri: string): AsyncIterable<string> {
  const raw: Readable = uri.startsWith('s3://')
    ? Readable.from(readChunks(uri))
    : createReadStream(uri.startsWith('file:') ? fileURLToPath(uri) : uri);
  if (!uri.endsWith('.gz')) return createInterface({ input: raw, crlfDelay: Infinity });
  // pipeline() forwards a read or gunzip failure to `text`, which fails the line iteration.
  const text = new PassThrough();
  pipeline(raw, createGunzip(), text, () => undefined);
  return createInterface({ input: text, crlfDelay: Infinity });
}

async function* readChunks(uri: string): AsyncIterable<Buffer> {
  yield await readObjectAtUri(uri);
}
