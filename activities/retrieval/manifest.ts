import type { CorpusStats } from '../corpus/corpus';
import { getJson } from '../clients/storage/codec';
import { openStore, type ObjectStore } from '../clients/storage';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';

export type IndexKind = 'bm25' | 'dense';

/**
 * An index is a folder of objects (a local directory or an s3:// prefix). `manifest.json` is written last,
 * so an index without one is half-written and is never loaded; with one, every other object is complete.
 */
export const INDEX_KEYS = {
  manifest: 'manifest.json',
  /** The passages, one JSON line each, in index order (`IndexedPassage`). */
  passages: 'passages.jsonl.gz',
  /** MiniSearch's serialised inverted index (bm25). */
  bm25: 'bm25.json.gz',
  /** N × dimensions little-endian Float32, row i the unit-length embedding of passage i (dense). */
  vectors: 'vectors.f32',
} as const;

export interface EmbeddingModel {
  /** OpenAI-compatible base URL the passages were embedded through, e.g. http://127.0.0.1:8100/v1. */
  baseUrl: string;
  model: string;
  dimensions: number;
}

export interface IndexManifest {
  v: 1;
  kind: IndexKind;
  /** The corpus URI the index was built from. */
  corpus: string;
  createdAt: string;
  documents: number;
  passages: number;
  wordsPerPassage: number;
  /** Corpus documents left out, by reason (the corpus loader's counts). */
  skipped: CorpusStats['skipped'];
  /** Dense indexes: the model the passages were embedded with; queries must use the same. */
  embedding?: EmbeddingModel;
}

export async function readManifest(store: ObjectStore): Promise<IndexManifest | undefined> {
  return getJson<IndexManifest>(store, INDEX_KEYS.manifest);
}

/** The store and manifest of a complete index, or a non-retryable error saying how to build one. */
export async function openIndex(uri: string): Promise<{ store: ObjectStore; manifest: IndexManifest }> {
  const store = openStore(uri);
  const manifest = await readManifest(store);
  if (!manifest) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `no complete search index at ${uri} (${INDEX_KEYS.manifest} is missing, so it was never built or its ` +
        `build did not finish): build it with 'npx selfplay index build --corpus CORPUS --out ${uri}' ` +
        `or point retrieval.index at a built one`,
    );
  }
  return { store, manifest };
}

/** The error for an object the manifest promises but the store lacks: the folder was damaged after it was built. */
export function missingIndexObject(store: ObjectStore, key: string): never {
  throw nonRetryable(
    NON_RETRYABLE.invalidConfig,
    `search index ${store.root} is damaged: ${key} is missing although ${INDEX_KEYS.manifest} exists; ` +
      `delete the folder and build it again`,
  );
}

/** An object the manifest promises; missing means the index folder was damaged after it was built. */
export async function requireObject(store: ObjectStore, key: string): Promise<Buffer> {
  return (await store.get(key)) ?? missingIndexObject(store, key);
}
