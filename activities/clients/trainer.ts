import type {
  CheckpointRequest,
  CheckpointResponse,
  PolicyState,
  PublishRequest,
  PublishResponse,
  RestoreRequest,
  TrainProgress,
  TrainStepRequest,
  TrainStepResponse,
  TrainerError,
} from './trainer-contract';
import { backoffMs, delay } from '../lib/backoff';
import { NON_RETRYABLE, nonRetryable, STORAGE_FULL_ADVICE } from '../lib/errors';

/**
 * How long a control route may take: `GET /v1/policies/{policy}` and `GET /v1/train/progress` answer from
 * memory, never behind a step (the kernel serves them beside its training and sampling executors), so a
 * kernel that does not answer this soon is down or wedged, not busy.
 */
export const CONTROL_TIMEOUT_MS = 30_000;

/**
 * Client of the training kernel's HTTP contract (trainer-contract.ts). A step is safe to resend: the kernel
 * applies an idempotency key at most once, so connection errors and 5xx are retried; 4xx are not, nor 507
 * (the kernel's storage is full: `StorageFull`, see classifyFailure). Every
 * request carries the kernel's bearer token when one is given (SELFPLAY_KERNEL_TOKEN). A step and the state
 * operations (checkpoint, restore, publish) may take `timeoutMs` (`timeouts.trainStepMinutes`), a control
 * route `controlTimeoutMs`; a request past its deadline fails naming the route and the deadline.
 */
export class TrainerClient {
  constructor(
    private readonly baseUrl: string,
    private readonly options: {
      timeoutMs: number;
      controlTimeoutMs?: number;
      maxRetries: number;
      token?: string;
    },
  ) {}

  trainStep(request: TrainStepRequest, signal?: AbortSignal): Promise<TrainStepResponse> {
    return this.call<TrainStepResponse>('POST', '/v1/train/step', request, signal);
  }

  policyState(policy: string, signal?: AbortSignal): Promise<PolicyState> {
    return this.call<PolicyState>(
      'GET',
      `/v1/policies/${encodeURIComponent(policy)}`,
      undefined,
      signal,
      this.options.controlTimeoutMs ?? CONTROL_TIMEOUT_MS,
    );
  }

  /** One try, no retries: the caller polls it again (activities/stages/step-progress.ts). */
  trainProgress(signal?: AbortSignal): Promise<TrainProgress> {
    const timeoutMs = this.options.controlTimeoutMs ?? CONTROL_TIMEOUT_MS;
    return this.call<TrainProgress>('GET', '/v1/train/progress', undefined, signal, timeoutMs, 0);
  }

  checkpoint(policy: string, request: CheckpointRequest, signal?: AbortSignal): Promise<CheckpointResponse> {
    return this.call<CheckpointResponse>(
      'POST',
      `/v1/policies/${encodeURIComponent(policy)}/checkpoint`,
      request,
      signal,
    );
  }

  restore(policy: string, request: RestoreRequest, signal?: AbortSignal): Promise<PolicyState> {
    return this.call<PolicyState>(
      'POST',
      `/v1/policies/${encodeURIComponent(policy)}/restore`,
      request,
      signal,
    );
  }

  publish(policy: string, request: PublishRequest, signal?: AbortSignal): Promise<PublishResponse> {
    return this.call<PublishResponse>(
      'POST',
      `/v1/policies/${encodeURIComponent(policy)}/publish`,
      request,
      signal,
    );
  }

  private async call<T>(
    method: string,
    path: string,
    body: unknown,
    signal?: AbortSignal,
    timeoutMs = this.options.timeoutMs,
    maxRetries = this.options.maxRetries,
  ): Promise<T> {
    const url = `${this.baseUrl.replace(/\/+$/, '')}${path}`;
    for (let attempt = 0; ; attempt++) {
      let failure: string;
      try {
        const response = await fetch(url, {
          method,
          headers: {
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: signal
            ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)])
            : AbortSignal.timeout(timeoutMs),
        });
        const text = await response.text();
        if (response.ok) return parseJson<T>(text, url);
        const message = errorMessage(text) ?? `HTTP ${response.status}`;
        if (response.status === 401) {
          throw nonRetryable(
            NON_RETRYABLE.invalidConfig,
            `trainer ${url}: ${message}; set SELFPLAY_KERNEL_TOKEN on the trainer workers to the kernel's token`,
          );
        }
        if (response.status === 409) {
          throw nonRetryable(NON_RETRYABLE.versionConflict, `trainer ${url}: ${message}`);
        }
        if (response.status === 422) {
          throw nonRetryable(
            NON_RETRYABLE.corruptData,
            `trainer ${url}: ${message}; the stored object is corrupt, and a retry would read the same bytes`,
          );
        }
        if (response.status === 507) {
          throw nonRetryable(
            NON_RETRYABLE.storageFull,
            `${STORAGE_FULL_ADVICE} (trainer ${url}: ${message})`,
          );
        }
        if (
          response.status >= 400 &&
          response.status < 500 &&
          response.status !== 408 &&
          response.status !== 429
        ) {
          throw nonRetryable(
            NON_RETRYABLE.contractViolation,
            `trainer ${url} refused the request: ${message}`,
          );
        }
        failure = `HTTP ${response.status}: ${message}`;
      } catch (err) {
        if (signal?.aborted || (err instanceof Error && err.name === 'ApplicationFailure')) throw err;
        // Duck-typed: the abort's DOMException may come from another realm.
        failure =
          (err as { name?: unknown } | null)?.name === 'TimeoutError'
            ? `${method} ${path} did not answer within its deadline of ${timeoutMs / 1000} s; a kernel that holds ` +
              'a step past its deadline is restarted by its supervisor (GET /health/live)'
            : err instanceof Error
              ? err.message
              : String(err);
      }
      if (attempt >= maxRetries) {
        throw new Error(`trainer ${url}: ${failure} (gave up after ${attempt + 1} attempts)`);
      }
      await delay(backoffMs(attempt), signal);
    }
  }
}

function parseJson<T>(text: string, url: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new Error(`trainer ${url} answered 200 with a body that is not JSON: ${text.slice(0, 200)}`);
  }
}

function errorMessage(text: string): string | undefined {
  try {
    const parsed = JSON.parse(text) as Partial<TrainerError>;
    return parsed.error ? `${parsed.error.type}: ${parsed.error.message}` : undefined;
  } catch {
    return text.slice(0, 300) || undefined;
  }
}
