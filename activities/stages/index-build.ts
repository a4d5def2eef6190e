import type { ActivityDeps } from './deps';
import { configuredApiKey } from '../../config/env';
import { heartbeatWhile } from '../lib/heartbeat';
import { buildIndex } from '../retrieval/build';
import { DEFAULT_EMBEDDING_MODEL } from '../retrieval/embeddings';
import type { IndexKind, IndexManifest } from '../retrieval/manifest';

export interface BuildIndexInput {
  /** JSONL corpus URI (local path, file:// or s3://). */
  corpus: string;
  /** Index location: a local directory or s3://bucket/prefix. */
  out: string;
  kind: IndexKind;
  /** Dense: the OpenAI-compatible embedding server and model (default: the kernel's bundled model). */
  embedding?: { baseUrl: string; model?: string; apiKeyEnv?: string };
}

export interface BuildIndexOutput {
  uri: string;
  built: boolean;
  documents: number;
  passages: number;
  skipped: IndexManifest['skipped'];
}

/**
 * Builds a search index as an activity (orchestrator pool), so a workflow can make sure its index exists
 * before rollouts search it. Idempotent like `buildIndex`: a retry after a crash rebuilds only an index
 * whose manifest was never written. Heartbeats report embedding progress.
 */
export function indexActivities(deps: Pick<ActivityDeps, 'env'>) {
  return {
    async buildIndex(input: BuildIndexInput): Promise<BuildIndexOutput> {
      let progress = { done: 0, total: 0 };
      const { uri, built, manifest } = await heartbeatWhile(
        () => progress,
        (signal) =>
          buildIndex({
            corpus: input.corpus,
            out: input.out,
            kind: input.kind,
            ...(input.embedding
              ? {
                  embedding: {
                    baseUrl: input.embedding.baseUrl,
                    model: input.embedding.model ?? DEFAULT_EMBEDDING_MODEL,
                    apiKey: configuredApiKey(
                      deps.env,
                      input.embedding,
                      `embedding server ${input.embedding.baseUrl}`,
                    ),
                  },
                }
              : {}),
            signal,
            onProgress: (done, total) => (progress = { done, total }),
          }),
      );
      const { documents, passages, skipped } = manifest;
      return { uri, built, documents, passages, skipped };
    },
  };
}
