import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { ZodError } from 'zod';
import { CALL_HEADER } from '../../../activities/clients/llm-protocol';
import { formatWeightTag } from '../../../activities/clients/weight-tag';
import { BodyError, closer, fieldPath, listen, readJson, sendJson } from '../http-json';
import { BEHAVIOURS } from './behaviour';
import type { CallBehaviour } from './completion';
import { fingerprintOf, parseChatRequest, type ChatRequest } from './chat-request';
import { choiceTokenFields, responseTokenFields, tokenIdsOf } from './token-ids';
import {
  applyPatch,
  configPatchSchema,
  DEFAULT_CONFIG,
  FAULT_KINDS,
  faultRatesFor,
  completionLatency,
  contextTokensFor,
  latencyFor,
  type ConfigPatch,
  type FaultKind,
} from './config';
import { chooseFault, MALFORMED_BODY } from './faults';
import { Slots } from './slots';

/**
 * An OpenAI-compatible server whose model is a script (see behaviour.ts) and whose engine is a FIFO scheduler
 * with a fixed capacity and latency, with transient faults on demand and the counts a test needs to prove
 * that the client never repeated a request, never exceeded the capacity and recovered from every fault.
 */

export interface ScriptedLlmOptions extends ConfigPatch {
  /** 0 (the default) lets the OS pick a free port. */
  port?: number;
  host?: string;
  /**
   * Also answer weight sync as the kernel's sampler of this policy (engine `kernel`): `POST /v1/sampler/load
   * {uri, version}` records the version, and `GET /v1/models` lists the policy with that `weight_version`. The
   * script's answers do not depend on it: only that every replica was brought to each version is observable.
   */
  samplerPolicy?: string;
  /** With `samplerPolicy`: the version served before any load (a server restarted with other weights). */
  weightVersion?: number;
  /** With `samplerPolicy`: the run whose weights are served before any load; a load names its own. */
  weightLineage?: string;
  /**
   * With `samplerPolicy`: the digest of the snapshot copy served before any load; a load names its own
   * (`sha256`), and answers carry it in their tag, as the kernel's do.
   */
  weightDigest?: string;
  /**
   * With `samplerPolicy`: awaited when a load request has arrived, before it takes effect, so a test can hold
   * a weight sync in flight (and crash its caller) without timing anything.
   */
  beforeSamplerLoad?: (version: number) => Promise<void>;
  /** Awaited when a chat request of `call` has arrived, before it is answered: holds a sample in flight. */
  beforeChat?: (call: string) => Promise<void>;
  /** Behaviours that replace the script's for their call kinds (e.g. a toy world's rule-based judge). */
  behaviours?: Readonly<Record<string, CallBehaviour>>;
}

export interface ScriptedStats {
  requests: number;
  completions: number;
  byCall: Record<string, { requests: number; completions: number }>;
  /** Requests answered 4xx before reaching a behaviour. */
  badRequests: number;
  /** Completions holding a slot now, and waiting for one. */
  inFlight: number;
  queued: number;
  /** The most completions that ran at once. */
  maxConcurrency: number;
  faults: Record<FaultKind, number>;
  /** Fingerprints seen more than once, with their counts. */
  duplicates: Record<string, number>;
  fingerprintCounts: Record<string, number>;
  /** With `samplerPolicy`: the version last loaded (undefined before any), and how many loads there were. */
  weightVersion?: number;
  samplerLoads: number;
  /** Loads that changed the version while a chat request was being answered: weights changed under it. */
  loadsUnderRequests: number;
  /** With `samplerPolicy`: the version served when each completion finished, in order (-1: none yet). */
  sampledVersions: number[];
  /** With `samplerPolicy`: per request fingerprint, the version of each answer to it, in order. */
  answeredVersions: Record<string, number[]>;
}

export interface ScriptedLlm {
  /** Base URL for an OpenAI client, ending in `/v1`. */
  url: string;
  port: number;
  stats(): ScriptedStats;
  /** Merges a patch into the configuration; throws when the patch is invalid. */
  configure(patch: ConfigPatch): void;
  /** Forgets every request seen (counts, fingerprints, pending failNext); the configuration stays. */
  reset(): void;
  /** Seconds within [fromMs, toMs] (epoch ms) during which the server worked on some completion. */
  busySecondsWithin(fromMs: number, toMs: number): number;
  /** Slot-seconds within [fromMs, toMs]: the time completions held slots there, summed over completions. */
  slotSecondsWithin(fromMs: number, toMs: number): number;
  close(): Promise<void>;
}

const BODY_LIMIT_BYTES = 32 * 1024 * 1024;
/** Tokens as the server counts them in `usage` and against `contextTokens`: one per 4 characters. */
export const approxTokens = (text: string): number => Math.ceil(text.length / 4);

interface Completion {
  content: string;
  finishReason: 'stop' | 'length';
}

/** Applies the request's stop strings and max_tokens, as an engine would. */
function truncate(content: string, request: ChatRequest): Completion {
  const cut = Math.min(...request.stop.map((s) => content.indexOf(s)).filter((i) => i >= 0), content.length);
  const stopped = content.slice(0, cut);
  if (request.maxTokens !== undefined && approxTokens(stopped) > request.maxTokens) {
    return { content: stopped.slice(0, request.maxTokens * 4), finishReason: 'length' };
  }
  return { content: stopped, finishReason: 'stop' };
}

function openAiError(res: ServerResponse, status: number, message: string, code: string): void {
  const type = status >= 500 ? 'server_error' : 'invalid_request_error';
  sendJson(res, status, { error: { message, type, code } });
}

function describe(err: unknown): string {
  if (err instanceof ZodError) return err.issues.map((i) => `${fieldPath(i.path)}: ${i.message}`).join('; ');
  return err instanceof Error ? err.message : String(err);
}

export async function startScriptedLlm(options: ScriptedLlmOptions = {}): Promise<ScriptedLlm> {
  const {
    port: wantedPort = 0,
    host = '127.0.0.1',
    samplerPolicy,
    weightVersion: initialVersion,
    weightLineage: initialLineage,
    weightDigest: initialDigest,
    beforeSamplerLoad,
    beforeChat,
    behaviours: replaced = {},
    ...patch
  } = options;
  const behaviours: Readonly<Record<string, CallBehaviour>> = { ...BEHAVIOURS, ...replaced };
  const initial = configPatchSchema.parse(patch);
  let config = applyPatch(DEFAULT_CONFIG, initial);
  let failNext = initial.failNext?.count ?? 0;
  const slots = new Slots(config.capacity);
  const fingerprints = new Map<string, number>();
  const byCall = new Map<string, { requests: number; completions: number }>();
  let faults = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  let badRequests = 0;
  let weightVersion: number | undefined = initialVersion;
  let weightLineage: string | undefined = initialLineage;
  let weightDigest: string | undefined = initialDigest;
  let samplerLoads = 0;
  let loadsUnderRequests = 0;
  /** Chat requests received and not yet answered. */
  let activeChats = 0;
  const sampledVersions: number[] = [];
  const answeredVersions = new Map<string, number[]>();
  const lifetime = new AbortController();

  const countsFor = (call: string): { requests: number; completions: number } => {
    const counts = byCall.get(call) ?? { requests: 0, completions: 0 };
    byCall.set(call, counts);
    return counts;
  };

  const configure = (input: ConfigPatch): void => {
    const parsed = configPatchSchema.parse(input);
    config = applyPatch(config, parsed);
    slots.setCapacity(config.capacity);
    if (parsed.failNext) failNext = parsed.failNext.count;
  };

  const stats = (): ScriptedStats => {
    const calls = Object.fromEntries([...byCall].map(([call, c]) => [call, { ...c }]));
    const counts = Object.fromEntries(fingerprints);
    return {
      requests: [...byCall.values()].reduce((sum, c) => sum + c.requests, 0),
      completions: [...byCall.values()].reduce((sum, c) => sum + c.completions, 0),
      byCall: calls,
      badRequests,
      inFlight: slots.inUse,
      queued: slots.waiting,
      maxConcurrency: slots.maxInUse,
      faults: { ...faults },
      duplicates: Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 1)),
      fingerprintCounts: counts,
      ...(weightVersion === undefined ? {} : { weightVersion }),
      samplerLoads,
      loadsUnderRequests,
      sampledVersions: [...sampledVersions],
      answeredVersions: Object.fromEntries([...answeredVersions].map(([f, vs]) => [f, [...vs]])),
    };
  };

  const reset = (): void => {
    fingerprints.clear();
    byCall.clear();
    faults = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
    badRequests = 0;
    failNext = 0;
    sampledVersions.length = 0;
    answeredVersions.clear();
    slots.resetPeak();
  };

  /** A completion's latency, its long-tail draw fixed by the request and the sample's index. */
  const latencyOf = (call: string, request: ChatRequest, index: number): number => {
    if (config.latencyTail === 0 && !config.lengths) return latencyFor(config, call);
    const print = fingerprintOf(
      call,
      request.messages,
      request.seed,
      request.n,
      request.prefix !== undefined,
    );
    const h = createHash('sha256').update(`${print}/${index}`).digest();
    const uniform = (at: number): number => (h.readUInt32BE(at) + 1) / 2 ** 32;
    return completionLatency(config, call, uniform(0), uniform(4));
  };

  /** Runs the n completions through the scheduler; each holds a slot for the call's latency. */
  const complete = (
    call: string,
    behaviour: CallBehaviour,
    request: ChatRequest,
    fault: FaultKind | undefined,
    signal: AbortSignal,
  ): Promise<Completion[]> => {
    const write =
      behaviour.fault && fault === behaviour.fault.kind ? behaviour.fault.write : behaviour.answer;
    return Promise.all(
      Array.from({ length: request.n }, async (_, index) => {
        const release = await slots.acquire(signal);
        try {
          await delay(latencyOf(call, request, index), undefined, { signal });
        } finally {
          release();
        }
        countsFor(call).completions++;
        if (samplerPolicy) sampledVersions.push(weightVersion ?? -1);
        const ctx = {
          model: request.model,
          messages: request.messages,
          prefix: request.prefix,
          seed: request.seed,
          temperature: request.temperature,
          index,
        };
        return truncate(write({ ...ctx, settings: config }), request);
      }),
    );
  };

  const chat = async (req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<void> => {
    const bad = (status: number, message: string, code: string): void => {
      badRequests++;
      openAiError(res, status, message, code);
    };
    const parsed = parseChatRequest(await readJson(req, BODY_LIMIT_BYTES));
    if (!parsed.ok) return bad(400, parsed.error, 'invalid_request');
    const request = parsed.request;
    if (request.stream)
      return bad(400, 'stream: streaming is not supported by the scripted server', 'invalid_request');
    if (!config.models.includes(request.model)) {
      return bad(404, `The model '${request.model}' does not exist`, 'model_not_found');
    }
    const call = req.headers[CALL_HEADER];
    if (typeof call !== 'string' || call === '')
      return bad(400, `missing header ${CALL_HEADER}`, 'unknown_call');
    const behaviour = behaviours[call];
    if (!behaviour) {
      const known = Object.keys(behaviours).join(', ');
      return bad(
        400,
        `unknown call "${call}" in header ${CALL_HEADER}; known calls: ${known}`,
        'unknown_call',
      );
    }

    await beforeChat?.(call);
    countsFor(call).requests++;
    const promptTokens = request.messages.reduce((sum, m) => sum + approxTokens(m.content), 0);
    const contextTokens = contextTokensFor(config, call);
    if (contextTokens !== undefined && promptTokens > contextTokens) {
      // vLLM's refusal, word for word but the numbers.
      return openAiError(
        res,
        400,
        `This model's maximum context length is ${contextTokens} tokens. However, your request has ` +
          `${promptTokens} input tokens. Please reduce the length of the input messages.`,
        'BadRequestError',
      );
    }
    const fingerprint = fingerprintOf(
      call,
      request.messages,
      request.seed,
      request.n,
      request.prefix !== undefined,
    );
    const seen = (fingerprints.get(fingerprint) ?? 0) + 1;
    fingerprints.set(fingerprint, seen);
    let fault: FaultKind | undefined;
    if (failNext > 0) {
      failNext--;
      fault = 'http500';
    } else if (seen === 1) {
      fault = chooseFault(fingerprint, faultRatesFor(config, call), behaviour.fault?.kind);
    }
    if (fault) faults[fault]++;

    if (fault === 'http500')
      return openAiError(res, 500, 'scripted fault: internal server error', 'scripted_fault');
    if (fault === 'timeout') {
      await delay(config.timeoutHoldMs, undefined, { signal }).catch(() => undefined);
      res.destroy();
      return;
    }
    const completions = await complete(call, behaviour, request, fault, signal);
    if (fault === 'malformedJson') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(MALFORMED_BODY);
      return;
    }
    const completionTokens = completions.reduce((sum, c) => sum + approxTokens(c.content), 0);
    const promptIds = tokenIdsOf(request.messages.map((m) => m.content).join('\n'));
    // As the kernel's sampler and SGLang do: the version the completions were sampled from.
    const served =
      samplerPolicy && weightVersion !== undefined
        ? { weight_version: formatWeightTag(weightVersion, weightLineage, weightDigest) }
        : {};
    if (samplerPolicy) {
      answeredVersions.set(fingerprint, [...(answeredVersions.get(fingerprint) ?? []), weightVersion ?? -1]);
    }
    sendJson(res, 200, {
      id: `chatcmpl-${fingerprint.slice(0, 24)}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: request.model,
      metadata: served,
      ...responseTokenFields(config.tokenIds, request, promptIds),
      choices: completions.map((c, index) => ({
        index,
        message: { role: 'assistant', content: c.content },
        logprobs: null,
        finish_reason: c.finishReason,
        ...choiceTokenFields(config.tokenIds, request, promptIds, c.content),
      })),
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
    });
  };

  const route = async (req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const endpoint = `${req.method ?? 'GET'} ${path}`;
    switch (endpoint) {
      case 'GET /v1/models': {
        const models = config.models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'scripted' }));
        const sampler = samplerPolicy && {
          id: samplerPolicy,
          object: 'model',
          created: 0,
          owned_by: 'scripted',
        };
        const version =
          weightVersion === undefined
            ? {}
            : { weight_version: weightVersion, lineage: weightLineage ?? null };
        return sendJson(res, 200, {
          object: 'list',
          data: sampler ? [...models, { ...sampler, ...version }] : models,
        });
      }
      case 'POST /v1/sampler/load': {
        if (!samplerPolicy) return openAiError(res, 404, `no route for ${endpoint}`, 'not_found');
        const body = (await readJson(req, BODY_LIMIT_BYTES)) as {
          uri?: unknown;
          version?: unknown;
          lineage?: unknown;
          sha256?: unknown;
        };
        if (
          typeof body.uri !== 'string' ||
          !Number.isSafeInteger(body.version) ||
          (body.version as number) < 0
        )
          return openAiError(
            res,
            400,
            'expected {"uri": string, "version": non-negative integer}',
            'invalid_request',
          );
        await beforeSamplerLoad?.(body.version as number);
        if (activeChats > 0 && weightVersion !== body.version) loadsUnderRequests++;
        weightVersion = body.version as number;
        weightLineage = typeof body.lineage === 'string' ? body.lineage : undefined;
        weightDigest = typeof body.sha256 === 'string' ? body.sha256 : undefined;
        samplerLoads++;
        return sendJson(res, 200, {
          object: 'sampler.load',
          model: samplerPolicy,
          weight_version: weightVersion,
        });
      }
      case 'POST /v1/chat/completions':
        activeChats++;
        return chat(req, res, signal).finally(() => activeChats--);
      case 'GET /admin/stats':
        return sendJson(res, 200, stats());
      case 'POST /admin/configure':
        try {
          configure((await readJson(req, BODY_LIMIT_BYTES)) as ConfigPatch);
        } catch (err) {
          if (err instanceof BodyError) throw err;
          return openAiError(res, 400, describe(err), 'invalid_config');
        }
        return sendJson(res, 200, { ok: true });
      case 'POST /admin/reset':
        reset();
        return sendJson(res, 200, { ok: true });
      default:
        return openAiError(res, 404, `no route for ${endpoint}`, 'not_found');
    }
  };

  const server = createServer((req, res) => {
    // A request ends early when its client goes away (as in a real engine) or when the server closes.
    const clientGone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) clientGone.abort();
    });
    const signal = AbortSignal.any([lifetime.signal, clientGone.signal]);
    setMaxListeners(0, signal); // each of the request's n completions listens to it
    route(req, res, signal).catch((err: unknown) => {
      if (signal.aborted) res.destroy();
      else if (err instanceof BodyError) {
        badRequests++;
        openAiError(res, err.status, err.message, 'invalid_request');
      } else openAiError(res, 500, `scripted server bug: ${describe(err)}`, 'internal');
    });
  });
  const port = await listen(server, wantedPort, host);
  const closeServer = closer(server);

  return {
    url: `http://${host}:${port}/v1`,
    port,
    stats,
    configure,
    reset,
    busySecondsWithin: (fromMs, toMs) => slots.busyMsWithin(fromMs, toMs) / 1000,
    slotSecondsWithin: (fromMs, toMs) => slots.slotMsWithin(fromMs, toMs) / 1000,
    close: () => {
      lifetime.abort();
      return closeServer();
    },
  };
}
