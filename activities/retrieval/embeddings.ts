import OpenAI, { APIConnectionError, APIError, APIUserAbortError } from 'openai';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';

export interface EmbeddingEndpoint {
  /** OpenAI-compatible base URL, e.g. http://127.0.0.1:8100/v1 (the kernel's `embed` command). */
  baseUrl: string;
  model: string;
  apiKey: string;
}

/** The embedding model bundled with the kernel (`python -m selfplay_kernel embed`). */
export const DEFAULT_EMBEDDING_MODEL = 'all-MiniLM-L6-v2';

/** Texts per request while building: large enough to batch on the server, small enough to stay responsive. */
export const EMBEDDING_BATCH = 64;

/**
 * Embeds texts through an OpenAI-compatible `/v1/embeddings` endpoint and returns unit-length vectors, so
 * a dot product is the cosine similarity whatever the server normalises. A server that cannot be reached
 * fails retryably (it may be starting); a server that refuses the request fails non-retryably.
 */
export class Embedder {
  private readonly client: OpenAI;

  constructor(readonly endpoint: EmbeddingEndpoint) {
    this.client = new OpenAI({
      baseURL: endpoint.baseUrl,
      apiKey: endpoint.apiKey,
      maxRetries: 2,
      timeout: 120_000,
    });
  }

  async embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const { baseUrl, model } = this.endpoint;
    try {
      const response = await this.client.embeddings.create(
        { model, input: texts, encoding_format: 'float' },
        { signal },
      );
      const vectors = response.data
        .slice()
        .sort((a, b) => a.index - b.index)
        .map((d) => normalise(Float32Array.from(d.embedding)));
      if (vectors.length !== texts.length) {
        throw new Error(
          `embedding server ${baseUrl} answered ${vectors.length} vectors for ${texts.length} texts`,
        );
      }
      return vectors;
    } catch (err) {
      if (err instanceof APIUserAbortError) throw err;
      if (err instanceof APIConnectionError) {
        throw new Error(
          `embedding server ${baseUrl} is unreachable (${err.message}): start one with ` +
            `'infra/kernels/.venv/bin/python -m selfplay_kernel embed --port 8100' (with SELFPLAY_KERNEL_TOKEN set) ` +
            'or set retrieval.embedding.baseUrl',
          { cause: err },
        );
      }
      if (err instanceof APIError && (err.status === 401 || err.status === 403)) {
        throw nonRetryable(
          NON_RETRYABLE.invalidConfig,
          `embedding server ${baseUrl} refused the credential (HTTP ${err.status}: ${err.message}); name the variable ` +
            `holding its key in retrieval.embedding.apiKeyEnv (the kernel's embed: SELFPLAY_KERNEL_TOKEN)`,
        );
      }
      if (err instanceof APIError && err.status !== undefined && err.status < 500 && err.status !== 429) {
        throw nonRetryable(
          NON_RETRYABLE.invalidConfig,
          `embedding server ${baseUrl} rejected the request for model "${model}" (HTTP ${err.status}: ${err.message}); ` +
            `check retrieval.embedding (baseUrl must end in /v1 and serve /embeddings)`,
        );
      }
      throw err;
    }
  }
}

/** Scales a vector to unit length in place (a zero vector stays zero). */
export function normalise(vector: Float32Array): Float32Array {
  let sum = 0;
  for (const x of vector) sum += x * x;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i] = (vector[i] as number) / norm;
  return vector;
}
