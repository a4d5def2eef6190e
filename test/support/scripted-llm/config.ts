import { z } from 'zod';

/**
 * What a test can turn on the scripted LLM server: the model's behaviour (how often tasks are MCQ, how hard
 * they are, how often the challenger writes garbage), the engine's shape (capacity, latency) and transient
 * faults. Everything is validated, because a typo in a test's patch should fail loudly, not silently.
 */

export const FAULT_KINDS = ['http500', 'timeout', 'malformedJson', 'missingBoxed', 'garbageContent'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
export type FaultRates = Record<FaultKind, number>;

export const ANSWER_TYPES = ['Integer', 'Expression', 'String'] as const;
export type AnswerType = (typeof ANSWER_TYPES)[number];

/** The part of the configuration the behaviours read. */
export interface BehaviourSettings {
  /** Probability that type selection picks MCQ over free-form. */
  mcqFraction: number;
  /** Relative weights of the free-form answer types type selection picks. */
  answerTypeWeights: Record<AnswerType, number>;
  /** Each task's pass rate p is drawn uniformly from [min, max] by a hash of its question. */
  passRate: { min: number; max: number };
  /** Probability that a challenger completion is an invalid task. */
  invalidTaskRate: number;
  /** Share of questions the model answers right without their documents (SPELL's grounding probe). */
  ungroundedRate: number;
  /**
   * Held-out evaluation answers (`eval.answer`): a question is answered right with probability
   * base + perVersion × v (clamped to [0, 1]), v being the version in the model name (`...-v{v}`, 0 without
   * one); each question's draw (each sample's, at a temperature above 0) is fixed, so a higher probability
   * never loses a question a lower one won.
   */
  evalSkill: { base: number; perVersion: number };
}

/**
 * Which engine's token-id fields the server answers with, when a request asks for them: vLLM's (`token_ids`,
 * a top-level `prompt_token_ids`, log-prob tokens named `token_id:{id}`), SGLang's (`token_ids` and
 * `prompt_token_ids` per choice, log-prob tokens as text), or none (an engine that cannot return ids: the
 * client falls back to text).
 */
export const TOKEN_ID_MODES = ['none', 'vllm', 'sglang'] as const;
export type TokenIdMode = (typeof TOKEN_ID_MODES)[number];

/** Overrides for one call kind (a CALL_HEADER value). */
export interface CallSettings {
  latencyMs?: number;
  faults?: Partial<FaultRates>;
  /** This call's context, in place of `contextTokens`: a test can refuse one prompt of a unit and not its others. */
  contextTokens?: number;
}

export interface ScriptedLlmConfig extends BehaviourSettings {
  /** Model ids the server serves; a request for another one gets 404, as from a real engine. */
  models: string[];
  /** The most completions worked on at once; more wait in a FIFO queue. */
  capacity: number;
  /** Time each completion holds its slot. */
  latencyMs: number;
  /**
   * σ of a log-normal factor (median 1, capped at 20) on each completion's latency: long-tailed completion
   * lengths, the factor drawn from the request and the sample's index so a rerun sees the same. 0: none.
   */
  latencyTail: number;
  /**
   * A recorded histogram of generation lengths, replayed in place of the log-normal: each completion draws a
   * bin by its count and holds its slot for the latency × the bin's tokens ÷ the histogram's median tokens.
   */
  lengths?: LengthBin[];
  /** How long a `timeout` fault holds the response before dropping the connection. */
  timeoutHoldMs: number;
  /** Fault rates for every call kind; `calls[kind].faults` overrides them per kind. */
  faults: FaultRates;
  calls: Record<string, CallSettings>;
  tokenIds: TokenIdMode;
  /**
   * The model's context in tokens (as the server counts a prompt: `approxTokens`): a longer prompt is refused
   * with vLLM's 400 `This model's maximum context length is …`. Unset: no limit. `calls[kind].contextTokens`
   * overrides it per kind.
   */
  contextTokens?: number;
}

/** One bin of a generation-length histogram: this many completions of about `tokens` tokens. */
export interface LengthBin {
  tokens: number;
  count: number;
}

export const DEFAULT_CONFIG: ScriptedLlmConfig = {
  models: ['scripted-policy'],
  capacity: 64,
  latencyMs: 0,
  latencyTail: 0,
  timeoutHoldMs: 60_000,
  faults: { http500: 0, timeout: 0, malformedJson: 0, missingBoxed: 0, garbageContent: 0 },
  calls: {},
  tokenIds: 'none',
  mcqFraction: 0.5,
  answerTypeWeights: { Integer: 0.7, Expression: 0.15, String: 0.15 },
  passRate: { min: 0, max: 1 },
  invalidTaskRate: 0.2,
  ungroundedRate: 0.1,
  evalSkill: { base: 0.5, perVersion: 0 },
};

const rate = z.number().min(0).max(1);
const faultRates = z.strictObject({
  http500: rate,
  timeout: rate,
  malformedJson: rate,
  missingBoxed: rate,
  garbageContent: rate,
});
const weight = z.number().min(0);

export const configPatchSchema = z.strictObject({
  models: z.array(z.string().min(1)).min(1).optional(),
  capacity: z.number().int().min(1).optional(),
  latencyMs: z.number().min(0).optional(),
  latencyTail: z.number().min(0).max(3).optional(),
  lengths: z
    .array(z.strictObject({ tokens: z.number().positive(), count: z.number().int().min(0) }))
    .refine((bins) => bins.some((b) => b.count > 0), 'lengths: at least one bin must have a positive count')
    .optional(),
  timeoutHoldMs: z.number().min(0).optional(),
  faults: faultRates.partial().optional(),
  calls: z
    .record(
      z.string().min(1),
      z.strictObject({
        latencyMs: z.number().min(0).optional(),
        faults: faultRates.partial().optional(),
        contextTokens: z.number().int().min(1).optional(),
      }),
    )
    .optional(),
  tokenIds: z.enum(TOKEN_ID_MODES).optional(),
  contextTokens: z.number().int().min(1).optional(),
  mcqFraction: rate.optional(),
  answerTypeWeights: z
    .strictObject({ Integer: weight, Expression: weight, String: weight })
    .partial()
    .optional(),
  passRate: z.strictObject({ min: rate, max: rate }).partial().optional(),
  invalidTaskRate: rate.optional(),
  ungroundedRate: rate.optional(),
  evalSkill: z.strictObject({ base: z.number(), perVersion: z.number() }).partial().optional(),
  /** Admin switch: the next `count` chat requests fail with HTTP 500, whatever their body. */
  failNext: z.strictObject({ count: z.number().int().min(0), kind: z.literal('http500') }).optional(),
});
/** A patch as a test writes it. */
export type ConfigPatch = z.input<typeof configPatchSchema>;
export type ParsedPatch = z.output<typeof configPatchSchema>;

/** The merged configuration (nested objects merge key by key); throws when the result is inconsistent. */
export function applyPatch(config: ScriptedLlmConfig, patch: ParsedPatch): ScriptedLlmConfig {
  const calls = { ...config.calls };
  for (const [kind, settings] of Object.entries(patch.calls ?? {})) {
    const before = calls[kind] ?? {};
    calls[kind] = { ...before, ...settings, faults: { ...before.faults, ...settings.faults } };
  }
  const merged: ScriptedLlmConfig = {
    models: patch.models ?? config.models,
    capacity: patch.capacity ?? config.capacity,
    latencyMs: patch.latencyMs ?? config.latencyMs,
    latencyTail: patch.latencyTail ?? config.latencyTail,
    ...((patch.lengths ?? config.lengths) ? { lengths: patch.lengths ?? config.lengths } : {}),
    timeoutHoldMs: patch.timeoutHoldMs ?? config.timeoutHoldMs,
    faults: { ...config.faults, ...patch.faults },
    calls,
    tokenIds: patch.tokenIds ?? config.tokenIds,
    ...((patch.contextTokens ?? config.contextTokens)
      ? { contextTokens: patch.contextTokens ?? config.contextTokens }
      : {}),
    mcqFraction: patch.mcqFraction ?? config.mcqFraction,
    answerTypeWeights: { ...config.answerTypeWeights, ...patch.answerTypeWeights },
    passRate: { ...config.passRate, ...patch.passRate },
    invalidTaskRate: patch.invalidTaskRate ?? config.invalidTaskRate,
    ungroundedRate: patch.ungroundedRate ?? config.ungroundedRate,
    evalSkill: { ...config.evalSkill, ...patch.evalSkill },
  };
  if (merged.passRate.min > merged.passRate.max) {
    throw new Error(`passRate.min (${merged.passRate.min}) exceeds passRate.max (${merged.passRate.max})`);
  }
  if (Object.values(merged.answerTypeWeights).every((w) => w === 0)) {
    throw new Error('answerTypeWeights: at least one weight must be positive');
  }
  return merged;
}

export function latencyFor(config: ScriptedLlmConfig, call: string): number {
  return config.calls[call]?.latencyMs ?? config.latencyMs;
}

export function contextTokensFor(config: ScriptedLlmConfig, call: string): number | undefined {
  return config.calls[call]?.contextTokens ?? config.contextTokens;
}

export function faultRatesFor(config: ScriptedLlmConfig, call: string): FaultRates {
  return { ...config.faults, ...config.calls[call]?.faults };
}

/** The most a long tail stretches one completion's latency (`latencyTail`). */
const TAIL_CAP = 20;

/**
 * One completion's latency for two uniform draws in (0, 1]: the call's, times its length relative to the
 * median (the recorded histogram's bin drawn, else the `latencyTail` log-normal factor).
 */
export function completionLatency(config: ScriptedLlmConfig, call: string, u1: number, u2: number): number {
  const base = latencyFor(config, call);
  if (config.lengths) return base * histogramFactor(config.lengths, u1);
  if (config.latencyTail === 0) return base;
  const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  return base * Math.min(Math.exp(config.latencyTail * z), TAIL_CAP);
}

/** The drawn bin's tokens ÷ the median tokens: the bin where the cumulative count first reaches u × total. */
function histogramFactor(bins: LengthBin[], u: number): number {
  const sorted = [...bins].sort((a, b) => a.tokens - b.tokens);
  const total = sorted.reduce((sum, b) => sum + b.count, 0);
  const at = (q: number): number => {
    let seen = 0;
    for (const b of sorted) if ((seen += b.count) >= q * total) return b.tokens;
    return (sorted.at(-1) as LengthBin).tokens;
  };
  return at(u) / at(0.5);
}
