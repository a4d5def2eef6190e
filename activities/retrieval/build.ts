import { loadCorpus } from '../corpus/corpus';
import { openStore } from '../clients/storage';
import { putJson, putJsonl } from '../clients/storage/codec';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import { buildBm25 } from './bm25';
import { EMBEDDING_BATCH, Embedder, type EmbeddingEndpoint } from './embeddings';
import { INDEX_KEYS, readManifest, type IndexKind, type IndexManifest } from './manifest';
import { DEFAULT_WORDS_PER_PASSAGE, passagesOf, type IndexedPassage } from './passages';
import { encodeVectors } from './vectors';

export interface BuildIndexOptions {
  /** JSONL corpus (local path, file:// or s3://), read with the corpus loader. */
  corpus: string;
  /** Where the index goes: a local directory or s3://bucket/prefix. */
  out: string;
  kind: IndexKind;
  wordsPerPassage?: number;
  /** Longer documents are skipped as oversized (the corpus loader's default otherwise). */
  maxDocumentChars?: number;
  /** Required for `dense`. */
  embedding?: EmbeddingEndpoint;
  signal?: AbortSignal;
  /** Called as passages are embedded (dense) so a long build can report progress. */
  onProgress?: (done: number, total: number) => void;
}

export interface BuildIndexResult {
  uri: string;
  /** False when a complete index was already there (nothing was written). */
  built: boolean;
  manifest: IndexManifest;
}

/**
 * Builds a search index from a corpus and stores it, manifest last. Idempotent: when `out` already holds a
 * complete index of the same corpus and kind it is returned untouched; one of another corpus or kind is an
 * error rather than something to overwrite. An interrupted build leaves no manifest and is simply redone.
 */
export async function buildIndex(options: BuildIndexOptions): Promise<BuildIndexResult> {
  const store = openStore(options.out);
  const existing = await readManifest(store);
  if (existing) {
    if (existing.kind !== options.kind || existing.corpus !== options.corpus) {
      throw nonRetryable(
        NON_RETRYABLE.invalidInput,
        `${options.out} already holds a ${existing.kind} index of ${existing.corpus}; ` +
          `choose another --out for a ${options.kind} index of ${options.corpus}`,
      );
    }
    return { uri: store.root, built: false, manifest: existing };
  }
  if (options.kind === 'dense' && !options.embedding) {
    throw nonRetryable(
      NON_RETRYABLE.invalidInput,
      'a dense index needs an embedding server (--embedding-url)',
    );
  }
  const wordsPerPassage = options.wordsPerPassage ?? DEFAULT_WORDS_PER_PASSAGE;
  const corpus = await loadCorpus(
    options.corpus,
    options.maxDocumentChars === undefined ? {} : { maxDocumentChars: options.maxDocumentChars },
  );
  const passages = passagesOf(corpus, wordsPerPassage);
  if (passages.length === 0) {
    throw nonRetryable(
      NON_RETRYABLE.invalidInput,
      `corpus ${options.corpus} has no usable document (skipped: ${JSON.stringify(corpus.stats.skipped)})`,
    );
  }
  await putJsonl(store, INDEX_KEYS.passages, passages);
  const manifest: IndexManifest = {
    v: 1,
    kind: options.kind,
    corpus: options.corpus,
    createdAt: new Date().toISOString(),
    documents: corpus.stats.documents,
    passages: passages.length,
    wordsPerPassage,
    skipped: corpus.stats.skipped,
  };
  if (options.kind === 'bm25') {
    await putJson(store, INDEX_KEYS.bm25, buildBm25(passages));
  } else {
    const embedder = new Embedder(options.embedding as EmbeddingEndpoint);
    const vectors = await embedAll(embedder, passages, options);
    await store.put(INDEX_KEYS.vectors, encodeVectors(vectors));
    const { baseUrl, model } = embedder.endpoint;
    manifest.embedding = { baseUrl, model, dimensions: (vectors[0] as Float32Array).length };
  }
  await putJson(store, INDEX_KEYS.manifest, manifest);
  return { uri: store.root, built: true, manifest };
}

async function embedAll(
  embedder: Embedder,
  passages: readonly IndexedPassage[],
  options: BuildIndexOptions,
): Promise<Float32Array[]> {
  const vectors: Float32Array[] = [];
  for (let start = 0; start < passages.length; start += EMBEDDING_BATCH) {
    // A passage is embedded with its title line, as wiki-18 passages carry their title.
    const batch = passages
      .slice(start, start + EMBEDDING_BATCH)
      .map((p) => (p.title === undefined ? p.text : `${p.title}\n${p.text}`));
    vectors.push(...(await embedder.embed(batch, options.signal)));
    options.onProgress?.(vectors.length, passages.length);
  }
  return vectors;
}
