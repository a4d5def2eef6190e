import { z } from 'zod';
import { inputColumns } from './input-columns';

/**
 * The `evaluation` section of a run config: held-out accuracy on benchmark files, measured on the committed
 * policy every `every` iterations (0: never, the default) and, with `atStart`, on the version the run starts
 * from. The same settings drive `selfplay eval` (see docs/evaluation.md).
 */

/** The benchmark file formats `activities/evaluation/benchmarks.ts` reads (detected from the fields when not given). */
export const BENCHMARK_FORMATS = ['gsm8k', 'math500', 'aime', 'amc', 'minerva', 'simple'] as const;
export type BenchmarkFormat = (typeof BENCHMARK_FORMATS)[number];

/** The fields the benchmark formats read, which `columns` may map to a file's own column names. */
export const BENCHMARK_FIELDS = ['id', 'question', 'problem', 'answer', 'solution'] as const;

/** A benchmark's name: a metric label and a storage key segment. */
export const BENCHMARK_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The prompt forms: the recipe's Reasoner (SPICE's template as configured, Qwen's for the others), or one named. */
export const EVAL_TEMPLATES = ['recipe', 'qwen', 'octothinker'] as const;

/** How an item is answered: one completion, or the recipe's search agent with its tool (`search`). */
export const EVAL_ROLLOUTS = ['answer', 'search'] as const;

/** The recipes whose solver is a search agent (`evaluation.rollout: "search"`). */
export const SEARCH_AGENT_RECIPES = ['ssp', 'scope'] as const;

/** Where a sample's answer is read (`evaluation.answerFormat`). */
export const ANSWER_FORMATS = ['boxed', 'answer_is'] as const;
export type AnswerFormat = (typeof ANSWER_FORMATS)[number];

export const benchmarkSpec = z
  .strictObject({
    name: z.string().regex(BENCHMARK_NAME, 'letters, digits, ".", "_" or "-" (max 64)'),
    /** JSONL (`.gz`, `.zst` ok) or Parquet: a path the rollout workers can read, file:// or s3://. */
    uri: z.string().min(1),
    format: z.enum(BENCHMARK_FORMATS).optional(),
    /** The file's columns for the format's fields when they have other names, e.g. `{"question": "prompt"}`. */
    columns: inputColumns(BENCHMARK_FIELDS).optional(),
    /** Only this many items: the first ones, or a seeded random subset with `subsetSeed`. */
    limit: z.number().int().positive().optional(),
    subsetSeed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1)
      .optional(),
  })
  .refine((b) => b.subsetSeed === undefined || b.limit !== undefined, {
    path: ['subsetSeed'],
    message: 'a subset needs its size: set limit too',
  });
export type BenchmarkSpec = z.output<typeof benchmarkSpec>;

export const evaluationParams = z
  .strictObject({
    /** Evaluate the committed policy every K iterations (and at the run's last one); 0: never. */
    every: z.number().int().min(0).max(1_000_000),
    /** Also evaluate the version the run starts from (version 0 for a new run), in its first iteration. */
    atStart: z.boolean(),
    benchmarks: z.array(benchmarkSpec),
    /** Samples per item: pass@k and maj@k are reported for k = 1, 2, 4, ... up to n when n > 1. */
    n: z.number().int().min(1).max(1024),
    temperature: z.number().min(0).max(5),
    topP: z.number().gt(0).max(1),
    /** Tokens per answer; default: `sampling.maxTokens`. */
    maxTokens: z.number().int().positive().max(1_000_000).optional(),
    /** Every item's request seed derives from this, the benchmark and the item. */
    seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1),
    /**
     * `answer`: one completion per sample in the `template`'s format, its last `\boxed{}` the answer.
     * `search`: the recipe's solver search rollout, as its solve stage runs it (SSP's or SCOPE's prompt,
     * tool-call syntax, turn and token budgets), with the run's `retrieval` index as the search tool; the
     * answer is its final `<answer>`, and the results count the searches per answer. `template` is unused.
     */
    rollout: z.enum(EVAL_ROLLOUTS),
    /** The prompt: a Reasoner form, or `{system?, user}` with `{question}` in `user`. */
    template: z.union([
      z.enum(EVAL_TEMPLATES),
      z.strictObject({
        system: z.string().min(1).optional(),
        user: z.string().includes('{question}', { message: 'must contain {question}' }),
      }),
    ]),
    /**
     * Where a sample's answer is read: the last `\\boxed{}` (`boxed`, the default), or the rest of the line
     * after the last "the answer is" (`answer_is`, SPELL's responder format, with a template of its own).
     */
    answerFormat: z.enum(ANSWER_FORMATS).optional(),
  })
  .refine((e) => (e.every === 0 && !e.atStart) || e.benchmarks.length > 0, {
    path: ['benchmarks'],
    message: 'evaluation is on (every > 0 or atStart) but no benchmark is given',
  })
  .refine((e) => new Set(e.benchmarks.map((b) => b.name)).size === e.benchmarks.length, {
    path: ['benchmarks'],
    message: 'benchmark names must be unique',
  })
  .refine((e) => e.n === 1 || e.temperature > 0, {
    path: ['temperature'],
    message: 'n > 1 samples per item need a temperature above 0 (greedy samples are all the same)',
  });
export type EvaluationParams = z.output<typeof evaluationParams>;
export type EvalTemplate = EvaluationParams['template'];

export const EVALUATION_DEFAULTS = {
  every: 0,
  atStart: false,
  benchmarks: [],
  n: 1,
  temperature: 0,
  topP: 1,
  seed: 0,
  rollout: 'answer',
  template: 'recipe',
} as const;

/** Whether a run with this section evaluates at all (a config of an older release has none). */
export const evaluationOn = (e: Pick<EvaluationParams, 'every' | 'atStart'> | undefined): boolean =>
  e !== undefined && (e.every > 0 || e.atStart);

/**
 * Whether iteration `iteration` of a run of `iterations` evaluates its new commit: every `every`-th one and
 * the last.
 */
export const evaluatesAfter = (
  e: Pick<EvaluationParams, 'every'> | undefined,
  iteration: number,
  iterations: number,
): boolean => e !== undefined && e.every > 0 && (iteration % e.every === 0 || iteration === iterations);
