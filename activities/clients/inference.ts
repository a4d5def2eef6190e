import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { ChatMessage } from './trainer-contract';
import { CALL_HEADER, ROLE_HEADER } from './llm-protocol';
import { WeightedSemaphore, type QueueRank } from '../lib/weighted-semaphore';
import { backoffMs, delay } from '../lib/backoff';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import { metrics } from '../lib/metrics';
import { countCompletionTokens } from '../lib/heartbeat';
import { sampledTokensOf, TOKEN_REQUEST, type SampledTokens } from './sampled-tokens';
import { parseWeightTag, type WeightTag } from './weight-tag';
import { runOfLineage } from '../../contracts/lineage';

const requestsTotal = metrics.counter(
  'selfplay_inference_requests_total',
  'Chat completion requests answered, by role and call',
);
const completionsTotal = metrics.counter(
  'selfplay_inference_completions_total',
  'Completions (choices) received, by role and call',
);
const tokensTotal = metrics.counter(
  'selfplay_inference_completion_tokens_total',
  'Completion tokens generated, by role and call (when the server reports usage)',
);
/**
 * With the engine's own queue (vLLM `num_requests_waiting`, SGLang `num_queue_reqs`) these say whether the
 * worker's budget, not the engine, holds the rollout: requests waiting here while the engine's queue is empty.
 */
const permitWaitSeconds = metrics.histogram(
  'selfplay_inference_permit_wait_seconds',
  "Seconds a request waited for the worker's completions in flight (SELFPLAY_INFERENCE_CONCURRENCY), by role and call",
);
const completionsInFlight = metrics.gauge(
  'selfplay_inference_completions_in_flight',
  "Completions the worker's requests hold at an endpoint, each request's n until its response returns, by endpoint and model",
);
const retriesTotal = metrics.counter(
  'selfplay_inference_retries_total',
  'Chat requests retried after a transient error, by role and call',
);

/**
 * OpenAI-compatible inference (vLLM, SGLang, the project's kernel) through the `openai` package, with what a
 * multi-day run needs around it: bounded concurrency counted in completions, a deadline per request,
 * retries with backoff on timeouts, 5xx, 429 and connection resets, and clear non-retryable errors for
 * requests that cannot succeed (unknown model, bad request, auth).
 */

export interface EndpointSettings {
  baseUrl: string;
  model: string;
  apiKey: string;
  /** The most completions this client keeps in flight at this endpoint. */
  maxConcurrentCompletions: number;
  supportsN: boolean;
  requestTimeoutMs: number;
  maxRetries: number;
}

export interface ChatRequest {
  /** Recipe role (challenger, reasoner, ...) and the call it makes; sent as headers for logs and test servers. */
  role: string;
  call: string;
  messages: ChatMessage[];
  n: number;
  /** Request seed: a retried shard sends the same seeds, so a deterministic server answers the same. */
  seed: number;
  temperature: number;
  topP: number;
  maxTokens: number;
  /** Strings that end a completion; the server leaves the matched one out of the content. */
  stop?: string[];
  /**
   * Continue the last message, which must be the assistant's, instead of starting a new one: a multi-turn
   * tool loop resends the trajectory so far as that message. Sent as vLLM's and SGLang's
   * `continue_final_message: true, add_generation_prompt: false`; the content returned is only the new text.
   */
  continueFinalMessage?: boolean;
  /**
   * The weights weight sync verified on this server before the shard sampled: the policy's version, the run
   * that synced it and its weights' digest prefix. A server that answers from other weights (it restarted,
   * another run loaded its own, or other weights of the version were published and loaded since) fails the
   * request with `WeightsMoved` instead of handing back samples the run did not sync.
   */
  weights?: WeightTag;
  /**
   * Where the request waits for this client's completions among its run's (`group`: the run, `rank`: the
   * iteration a stage samples for): with iterations in flight the older one's requests go first and a newer
   * one fills only what the older leaves free; other runs' requests keep their places (arrival order).
   * Evaluations name none: they wait in arrival order.
   */
  rank?: QueueRank;
  signal?: AbortSignal;
}

export interface ChatSample {
  content: string;
  finishReason: string;
  /** The completion's tokens as the server counted them; only for a one-sample request that reported usage. */
  completionTokens?: number;
  /** The token ids the engine sampled and their log-probs, when it returned them (sampled-tokens.ts). */
  sampled?: SampledTokens;
}

export interface LlmCaller {
  chat(request: ChatRequest): Promise<ChatSample[]>;
}

export class InferenceEndpoint implements LlmCaller {
  private readonly client: OpenAI;
  private readonly slots: WeightedSemaphore;

  constructor(readonly settings: EndpointSettings) {
    this.client = new OpenAI({
      baseURL: settings.baseUrl,
      apiKey: settings.apiKey,
      timeout: settings.requestTimeoutMs,
      maxRetries: 0, // retries are ours, so they share the backoff and the error classification below
    });
    this.slots = new WeightedSemaphore(settings.maxConcurrentCompletions);
  }

  async chat(request: ChatRequest): Promise<ChatSample[]> {
    if (this.settings.supportsN || request.n === 1) return this.send(request);
    // One request per sample, seeds seed..seed+n-1, so the answers stay deterministic.
    const parts = await Promise.all(
      Array.from({ length: request.n }, (_, i) =>
        this.send({ ...request, n: 1, seed: (request.seed + i) >>> 0 }),
      ),
    );
    return parts.flat();
  }

  private async send(request: ChatRequest): Promise<ChatSample[]> {
    const labels = { role: request.role, call: request.call };
    for (let attempt = 0; ; attempt++) {
      const waitStart = performance.now();
      const release = await this.slots.acquire(request.n, request.rank);
      permitWaitSeconds.observe(labels, (performance.now() - waitStart) / 1000);
      this.reportInFlight();
      try {
        return await this.once(request);
      } catch (err) {
        if (err instanceof WeightsMoved) throw err;
        if (!isRetryable(err)) throw classify(err, this.settings, request.weights);
        if (attempt >= this.settings.maxRetries) {
          throw new Error(
            `${describe(this.settings)}: ${errorText(err)} (gave up after ${attempt + 1} attempts)`,
          );
        }
        retriesTotal.inc(labels);
      } finally {
        release();
        this.reportInFlight();
      }
      await delay(backoffMs(attempt), request.signal);
    }
  }

  private reportInFlight(): void {
    completionsInFlight.set({ endpoint: this.settings.baseUrl, model: this.settings.model }, this.slots.held);
  }

  private async once(request: ChatRequest): Promise<ChatSample[]> {
    const body: ChatCompletionCreateParamsNonStreaming & EngineChatExtensions = {
      model: this.settings.model,
      messages: request.messages,
      n: request.n,
      seed: request.seed,
      temperature: request.temperature,
      top_p: request.topP,
      max_tokens: request.maxTokens,
      ...(request.stop && request.stop.length > 0 ? { stop: request.stop } : {}),
      ...(request.continueFinalMessage ? { continue_final_message: true, add_generation_prompt: false } : {}),
      ...TOKEN_REQUEST,
    };
    const response = await this.client.chat.completions.create(body, {
      headers: { [ROLE_HEADER]: request.role, [CALL_HEADER]: request.call },
      ...(request.signal ? { signal: request.signal } : {}),
    });
    checkServedWeights(response, request.weights, this.settings);
    const choices = Array.isArray(response?.choices) ? response.choices : [];
    if (choices.length !== request.n) {
      throw new MalformedResponse(`expected ${request.n} choices, got ${choices.length}`);
    }
    const labels = { role: request.role, call: request.call };
    requestsTotal.inc(labels);
    completionsTotal.inc(labels, choices.length);
    const tokens = response.usage?.completion_tokens;
    if (typeof tokens === 'number') {
      tokensTotal.inc(labels, tokens);
      countCompletionTokens(tokens);
    }
    const counted = request.n === 1 && typeof tokens === 'number' ? { completionTokens: tokens } : {};
    // The ids go with the temperature and top-p they were sampled at: the kernel scores them at that temperature.
    const drawn = { temperature: request.temperature, topP: request.topP };
    return [...choices]
      .sort((a, b) => a.index - b.index)
      .map((c) => {
        const sampled = readSampled(c);
        return {
          content: typeof c.message?.content === 'string' ? c.message.content : '',
          finishReason: String(c.finish_reason ?? 'unknown'),
          ...counted,
          ...(sampled ? { sampled: { ...sampled, ...drawn } } : {}),
        };
      });
  }
}

/**
 * Chat-template switches and token-id requests vLLM and SGLang accept beside OpenAI's fields (the `openai`
 * package sends them as given).
 */
interface EngineChatExtensions {
  continue_final_message?: boolean;
  add_generation_prompt?: boolean;
  return_token_ids?: boolean;
  return_tokens_as_token_ids?: boolean;
}

/** A 200 answer that is not a chat completion: a proxy or server fault, worth retrying. */
class MalformedResponse extends Error {}

/**
 * The server no longer serves the version the shard synced it to. Not retried here (the same server would
 * answer the same); the shard activity fails, Temporal retries it, and its retry syncs the server again before
 * it samples. Units stored before stay, and no unit with a sample of the other weights is stored.
 */
export class WeightsMoved extends Error {
  override readonly name = 'WeightsMoved';
}

/**
 * The weights a response says it was sampled from, as SGLang reports them (`metadata.weight_version`; the
 * kernel's sampler does the same). vLLM reports none: its version and run are in the adapter's name, so a
 * server that lost the adapter answers 404 instead (see `classify`).
 */
function checkServedWeights(
  response: unknown,
  wanted: WeightTag | undefined,
  settings: EndpointSettings,
): void {
  if (wanted === undefined) return;
  const served = parseWeightTag(
    (response as { metadata?: { weight_version?: unknown } } | null)?.metadata?.weight_version,
  );
  if (served === undefined) return;
  const otherRun =
    served.run !== undefined && wanted.run !== undefined && runOfLineage(served.run) !== wanted.run;
  // Either side without a digest (weights from before digests, or the live weights) says nothing about it.
  const otherDigest =
    served.digest !== undefined && wanted.digest !== undefined && served.digest !== wanted.digest;
  if (served.version !== wanted.version || otherRun || otherDigest) {
    throw new WeightsMoved(
      `${describe(settings)}: answered from ${weightsText(served)}, but the shard synced it to ${weightsText(wanted)} ` +
        '(the server restarted or loaded other weights); the shard syncs it again and resamples',
    );
  }
}

const weightsText = ({ run, version, digest }: WeightTag): string => {
  const which = `weight version ${version}${digest === undefined ? '' : ` (weights ${digest})`}`;
  return run === undefined ? which : `run "${run}"'s ${which}`;
};

function readSampled(choice: unknown): SampledTokens | undefined {
  try {
    return sampledTokensOf(choice);
  } catch (err) {
    throw new MalformedResponse(errorText(err));
  }
}

function isRetryable(err: unknown): boolean {
  if (err instanceof OpenAI.APIError && typeof err.status === 'number') {
    return err.status === 408 || err.status === 409 || err.status === 429 || err.status >= 500;
  }
  // Connection errors, timeouts, resets, bodies that are not JSON: transient until proven otherwise.
  return !(err instanceof Error && err.name === 'AbortError');
}

function classify(err: unknown, settings: EndpointSettings, weights: WeightTag | undefined): Error {
  if (err instanceof OpenAI.APIError && err.status === 404 && weights !== undefined) {
    // Weight sync verified this model on the server before the shard sampled: it lost it since (a restart).
    return new WeightsMoved(
      `${describe(settings)}: the server no longer serves "${settings.model}" (404), which weight sync had ` +
        `verified at version ${weights.version}; the shard syncs it again`,
    );
  }
  if (err instanceof OpenAI.APIError && err.status === 404) {
    return nonRetryable(
      NON_RETRYABLE.unknownModel,
      `${describe(settings)}: the server does not know model "${settings.model}" (404). ` +
        `Check inference.default.model / SELFPLAY_INFERENCE_MODEL against GET ${settings.baseUrl}/models.`,
    );
  }
  if (err instanceof OpenAI.APIError && (err.status === 401 || err.status === 403)) {
    return nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `${describe(settings)}: authentication refused (${err.status}); set SELFPLAY_INFERENCE_API_KEY on the worker.`,
    );
  }
  if (err instanceof OpenAI.APIError && err.status === 400 && isContextLengthRefusal(err)) {
    return new ContextLengthExceeded(
      `${describe(settings)}: the prompt does not fit the model's context: ${errorText(err)}`,
    );
  }
  if (err instanceof OpenAI.APIError) {
    return nonRetryable(
      NON_RETRYABLE.invalidInput,
      `${describe(settings)}: request rejected: ${errorText(err)}`,
    );
  }
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * A prompt longer than the model's context (a 400 no retry changes): an `InvalidInput`, of its own class so a
 * multi-turn loop can end the trajectory where its next turn no longer fits (tools/search-loop.ts).
 */
export class ContextLengthExceeded extends ApplicationFailure {
  constructor(message: string) {
    super(message, NON_RETRYABLE.invalidInput, true);
  }
}

/**
 * The engines' words for it: OpenAI's and the kernel's `context_length_exceeded` code; vLLM's "maximum context
 * length is N tokens"; SGLang's "longer than the model's context length".
 */
function isContextLengthRefusal(err: { code?: unknown; message: string }): boolean {
  return err.code === 'context_length_exceeded' || /context length|context window/i.test(err.message);
}

const describe = (s: EndpointSettings): string => `inference ${s.baseUrl} (${s.model})`;
const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** One endpoint object per (baseUrl, model): endpoints, and so their concurrency limits, are shared by all shards. */
export class InferencePool {
  private readonly endpoints = new Map<string, InferenceEndpoint>();

  endpoint(settings: EndpointSettings): InferenceEndpoint {
    const key = `${settings.baseUrl}\u0000${settings.model}`;
    let ep = this.endpoints.get(key);
    if (!ep) {
      ep = new InferenceEndpoint(settings);
      this.endpoints.set(key, ep);
    }
    return ep;
  }
}
