import { backoffMs, delay } from '../../lib/backoff';

/**
 * The one HTTP helper the engine adapters share: every try has a deadline, transient failures (5xx, 408,
 * 429, connection errors, a try's deadline) are retried with backoff, and a 4xx (the server understood and
 * refused) is never retried and carries the server's own message.
 */

export interface HttpPolicy {
  /** Deadline of one try of a read. */
  readTimeoutMs: number;
  /** Deadline of one try of a load: loading a full model from disk can take minutes. */
  loadTimeoutMs: number;
  /** Tries after the first for transient failures. */
  retries: number;
  /** The first backoff's cap; it doubles per retry (full jitter). */
  backoffBaseMs: number;
}

export const DEFAULT_HTTP_POLICY: HttpPolicy = {
  readTimeoutMs: 30_000,
  loadTimeoutMs: 15 * 60_000,
  retries: 4,
  backoffBaseMs: 500,
};

/** A 4xx answer: sending the same request again cannot help. */
export class EngineRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The error body's `error.type` (the kernel's `lineage_conflict`), when it has one. */
    readonly type?: string,
  ) {
    super(message);
    this.name = 'EngineRefusal';
  }
}

/** The server's base URL without a trailing `/v1` (what samplers use as the OpenAI base URL). */
export function engineRoot(server: string): string {
  return server.replace(/\/+$/, '').replace(/\/v1$/, '');
}

/** A bearer token for the server (the kernel's), sent as `Authorization`; none for servers that need none. */
export type BearerToken = string | undefined;

/**
 * The token of each server: the credential the worker's environment binds to its URL
 * (config/endpoint-bindings.ts), never one a run config chose. None by default.
 */
export type TokenFor = (server: string) => BearerToken;
export const NO_TOKEN: TokenFor = () => undefined;

export async function getJson(
  url: string,
  policy: HttpPolicy,
  signal?: AbortSignal,
  token?: BearerToken,
): Promise<unknown> {
  const text = await send('GET', url, undefined, policy.readTimeoutMs, policy, signal, token);
  return parseAnswer(`GET ${url}`, text);
}

/** A 2xx answer that is not JSON: a proxy or server fault, so a plain (retryable) error. */
export function parseAnswer(what: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new Error(`${what}: the answer is not JSON: ${text.slice(0, 200)}`);
  }
}

/** The entries of an OpenAI model list, `GET {root}/v1/models` (vLLM and the kernel sampler). */
export async function listModels(
  root: string,
  policy: HttpPolicy,
  signal?: AbortSignal,
  token?: BearerToken,
): Promise<Array<Record<string, unknown>>> {
  const url = `${root}/v1/models`;
  const data = ((await getJson(url, policy, signal, token)) as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw new Error(`GET ${url}: not an OpenAI model list (no data array)`);
  return data.filter((m): m is Record<string, unknown> => typeof m === 'object' && m !== null);
}

/** POSTs a JSON body and returns the 2xx answer's text (vLLM answers loads with plain text). */
export function postJson(
  url: string,
  body: unknown,
  policy: HttpPolicy,
  signal?: AbortSignal,
  token?: BearerToken,
): Promise<string> {
  return send('POST', url, body, policy.loadTimeoutMs, policy, signal, token);
}

async function send(
  method: 'GET' | 'POST',
  url: string,
  body: unknown,
  timeoutMs: number,
  policy: HttpPolicy,
  signal: AbortSignal | undefined,
  token: BearerToken,
): Promise<string> {
  const what = `${method} ${url}`;
  const headers: Record<string, string> = {
    ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
  };
  for (let attempt = 0; ; attempt++) {
    const tryDeadline = AbortSignal.timeout(timeoutMs);
    let problem: string;
    try {
      const res = await fetch(url, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: signal ? AbortSignal.any([signal, tryDeadline]) : tryDeadline,
      });
      const text = await res.text();
      if (res.ok) return text;
      problem = `${res.status} ${serverMessage(text)}`;
      if (res.status < 500 && res.status !== 408 && res.status !== 429) {
        throw new EngineRefusal(res.status, `${what}: ${problem}`, errorType(text));
      }
    } catch (err) {
      if (err instanceof EngineRefusal) throw err;
      if (signal?.aborted) throw new Error(`${what}: ${errorMessage(signal.reason)}`, { cause: err });
      problem = tryDeadline.aborted ? `no answer within ${timeoutMs} ms` : errorMessage(err);
    }
    if (attempt >= policy.retries) {
      throw new Error(`${what}: ${problem} (gave up after ${attempt + 1} tries)`);
    }
    await delay(backoffMs(attempt, policy.backoffBaseMs), signal);
  }
}

/** The message in an engine's error body: OpenAI `error.message`, SGLang `message`, FastAPI `detail`. */
function serverMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown }; message?: unknown; detail?: unknown };
    const message = body.error?.message ?? body.message ?? body.detail;
    if (typeof message === 'string') return message;
    if (message !== undefined) return JSON.stringify(message);
  } catch {
    // not JSON: the text itself is the message
  }
  return text.trim().slice(0, 500) || '(empty body)';
}

/** The `error.type` of an OpenAI-style error body (the kernel's), if any. */
function errorType(text: string): string | undefined {
  try {
    const type = (JSON.parse(text) as { error?: { type?: unknown } }).error?.type;
    return typeof type === 'string' ? type : undefined;
  } catch {
    return undefined;
  }
}

/**
 * An error's message with its cause: fetch reports connection errors as "fetch failed" with the useful
 * part (ECONNREFUSED ...) in `cause`. Duck-typed: fetch and AbortSignal errors may come from another realm.
 */
export function errorMessage(err: unknown): string {
  const { message, cause } = (err ?? {}) as {
    message?: unknown;
    cause?: { message?: unknown; code?: unknown };
  };
  if (typeof message !== 'string') return String(err);
  const detail = cause?.message || cause?.code;
  return typeof detail === 'string' ? `${message}: ${detail}` : message;
}
