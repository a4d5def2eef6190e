import type { Passage, Retriever, SearchOptions } from '../tools/types';
import type { RunConfig } from '../../config/schema';
import { configuredApiKey, type WorkerEnv } from '../../config/env';
import { inputProblem } from '../../config/input-roots';
import { getJson, getJsonl } from '../clients/storage/codec';
import type { ObjectStore } from '../clients/storage/types';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import { bm25Ranker, type Hit } from './bm25';
import { Embedder } from './embeddings';
import {
  INDEX_KEYS,
  missingIndexObject,
  openIndex,
  requireObject,
  type IndexKind,
  type IndexManifest,
} from './manifest';
import type { IndexedPassage } from './passages';
import { cutToTokens } from './tokens';
import { decodeVectors, topKByDot } from './vectors';

type Ranker = (query: string, topK: number, signal?: AbortSignal) => Hit[] | Promise<Hit[]>;

/** Where a dense index's queries are embedded; each field falls back to what the index was built with. */
export interface QueryEmbedding {
  baseUrl?: string;
  model?: string;
  /** The key, or how to choose it once the server is known (it may come from the index's manifest). */
  apiKey: string | ((baseUrl: string) => string);
}

/**
 * Opens a built index (local directory or s3:// prefix) and answers searches from memory. A dense index
 * embeds each query through the embedding server, which must serve the model the passages were embedded
 * with (the manifest names it). `expectedKind`, when given, must be the index's kind.
 */
export async function loadRetriever(
  uri: string,
  embedding: QueryEmbedding,
  expectedKind?: IndexKind,
): Promise<Retriever> {
  const { store, manifest } = await openIndex(uri);
  if (expectedKind !== undefined && manifest.kind !== expectedKind) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `retrieval.kind is "${expectedKind}" but ${uri} is a ${manifest.kind} index; set retrieval.kind to match or build a ${expectedKind} index`,
    );
  }
  const passages =
    (await getJsonl<IndexedPassage>(store, INDEX_KEYS.passages)) ??
    missingIndexObject(store, INDEX_KEYS.passages);
  if (passages.length !== manifest.passages) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `search index ${uri} is damaged: ${passages.length} passages stored, the manifest says ${manifest.passages}`,
    );
  }
  const rank = manifest.kind === 'bm25' ? await loadBm25(store) : await loadDense(store, manifest, embedding);
  return {
    name: `${manifest.kind}:${uri}`,
    async search(query: string, options: SearchOptions): Promise<Passage[]> {
      options.signal?.throwIfAborted();
      if (query.trim() === '' || options.topK <= 0) return [];
      const hits = await rank(query, options.topK, options.signal);
      return hits.map(({ index, score }) => {
        const p = passages[index] as IndexedPassage;
        return {
          id: p.id,
          ...(p.title === undefined ? {} : { title: p.title }),
          text: cutToTokens(p.text, options.maxTokens),
          score,
        };
      });
    },
  };
}

async function loadBm25(store: ObjectStore): Promise<Ranker> {
  const index = await getJson<unknown>(store, INDEX_KEYS.bm25);
  return bm25Ranker(index === undefined ? missingIndexObject(store, INDEX_KEYS.bm25) : index);
}

async function loadDense(
  store: ObjectStore,
  manifest: IndexManifest,
  query: QueryEmbedding,
): Promise<Ranker> {
  const built = manifest.embedding;
  if (!built) {
    throw nonRetryable(NON_RETRYABLE.invalidConfig, `dense index ${store.root} names no embedding model`);
  }
  if (query.model !== undefined && query.model !== built.model) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `retrieval.embedding.model is "${query.model}" but index ${store.root} was embedded with "${built.model}"; ` +
        `queries must use the same model (leave the field out to use the index's)`,
    );
  }
  const matrix = decodeVectors(
    await requireObject(store, INDEX_KEYS.vectors),
    manifest.passages,
    built.dimensions,
  );
  const baseUrl = query.baseUrl ?? built.baseUrl;
  const embedder = new Embedder({
    baseUrl,
    model: built.model,
    apiKey: typeof query.apiKey === 'string' ? query.apiKey : query.apiKey(baseUrl),
  });
  return async (text, topK, signal) => {
    const [vector] = await embedder.embed([text], signal);
    if (vector?.length !== built.dimensions) {
      throw nonRetryable(
        NON_RETRYABLE.invalidConfig,
        `embedding server ${embedder.endpoint.baseUrl} returned ${vector?.length}-dimensional vectors; ` +
          `index ${store.root} holds ${built.dimensions}-dimensional ones`,
      );
    }
    return topKByDot(matrix, built.dimensions, vector, topK);
  };
}

const cache = new Map<string, Promise<Retriever>>();

/**
 * The run's retriever, loaded once per worker process and index (every shard and rollout of the worker
 * shares it); a failed load is not cached, so a later activity attempt tries again.
 */
export function retrieverFor(config: RunConfig, deps: { env: WorkerEnv }): Promise<Retriever> {
  const { index, kind, embedding } = config.retrieval;
  if (!index) {
    return Promise.reject(
      nonRetryable(
        NON_RETRYABLE.invalidConfig,
        `retrieval.index is not set: build an index with 'npx selfplay index build --corpus CORPUS --out DIR_OR_S3' ` +
          `and set retrieval.index to that location`,
      ),
    );
  }
  const outside = inputProblem(deps.env.inputRoots, index, 'retrieval.index');
  if (outside) return Promise.reject(nonRetryable(NON_RETRYABLE.invalidConfig, outside));
  const key = JSON.stringify([index, kind, embedding?.baseUrl, embedding?.model]);
  let loading = cache.get(key);
  if (!loading) {
    // The key goes to the server actually called, which the index's manifest may name: checked against it.
    const apiKey = (baseUrl: string): string =>
      configuredApiKey(deps.env, { baseUrl, apiKeyEnv: embedding?.apiKeyEnv }, `embedding server ${baseUrl}`);
    loading = loadRetriever(index, { ...embedding, apiKey }, kind);
    loading.catch(() => cache.delete(key));
    cache.set(key, loading);
  }
  return loading;
}

/** Drops loaded indexes, e.g. after the objects behind an index URI were rebuilt (tests). */
export function forgetRetrievers(): void {
  cache.clear();
}
