/**
 * SSP preset (docs/recipes/ssp.md): one policy as a proposer that searches backwards from a ground-truth
 * answer to write a question, and a solver that answers it with multi-turn search (n = 5, ≤ 10 turns).
 * Questions must pass a rule filter and RAG verification (the proposer's own retrieved documents plus 4
 * noise blocks, answered once without search); invalid slots are filled from a replay pool reset every 10
 * steps. Proposer: REINFORCE without baseline on 1 − solver success; solver: GRPO. Table 4 of the paper.
 */
import { z } from 'zod';
import { inputColumns } from '../input-columns';

const positiveInt = z.number().int().positive();
const probability = z.number().min(0).max(1);

/** Sampling of a one-shot helper call (RAG verifier, judge): never trained on. */
const helperSampling = z.strictObject({
  temperature: z.number().min(0).max(5),
  maxTokens: positiveInt.max(1_000_000),
});

/** The `ssp` section of a run config. */
export const sspParams = z.strictObject({
  /**
   * The ground-truth answers D (§1.1): local path or s3://, JSONL (`.gz`, `.zst`) or Parquet, one
   * `{"answer": ...}` per record, with optional `search_turns` (n) and `examples` (3 example questions; the
   * released data's `sys_question_example` is accepted too). `ground_truth` is accepted for `answer`.
   */
  answers: z.string().min(1),
  /** The answer file's columns for these fields when they have other names, e.g. `{"answer": "target"}`. */
  answerColumns: inputColumns(['answer', 'search_turns', 'examples']).optional(),
  /** n for a record without `search_turns`. *Unspecified* in the spec; 2 is the least the rule filter accepts. */
  defaultSearchTurns: positiveInt.max(10),
  /** Assistant turns of a trajectory at most, both roles (§1.2, §3: ≤ 10 search turns). */
  maxTurns: positiveInt.max(100),
  /**
   * Proposer sampling temperature (§1.2: 1.0 in the paper, 0.8 in the released yaml). The solver uses
   * `sampling.temperature`.
   */
  proposerTemperature: z.number().min(0).max(5),
  /** The rule filter (§1.4, the released code's exact rules). */
  rules: z.strictObject({
    minChars: positiveInt,
    maxChars: positiveInt,
    /** Space-separated words at least. */
    minWords: positiveInt,
    /** Search calls at least (distinct queries are required too). */
    minSearches: z.number().int().min(0),
    /** The optional "answer inside a search query" filter (§1.4, off in the code). */
    banAnswerInQueries: z.boolean(),
    /**
     * Require at least the record's n searches, not only `minSearches`. The code never checks n (§7 lists it
     * among its pitfalls), but neither does the paper's rule filter, so it is off by default.
     */
    requireSearchTurns: z.boolean(),
  }),
  /** RAG verification (§1.5); off is the paper's "no verification" ablation (Table 3). */
  ragVerification: z.boolean(),
  /** Noise blocks from other trajectories of the shard (Table 3: 4 is best, 7 confuses the verifier). */
  noiseBlocks: z.number().int().min(0).max(64),
  /**
   * The RAG verifier's sampling (role `verifier`: the policy unless `inference.roles.verifier` names another
   * model). The released code calls its judge server at temperature 0.1, max_tokens 70 (§1.5).
   */
  verifier: helperSampling,
  /** The LLM judge's sampling (role `judge`), temperature 0.1 and max_tokens 10 in the code (§2). */
  judge: helperSampling,
  /** The replay pool that fills invalid slots (§1.6); off pads with nothing (the "dummy padding" ablation). */
  replay: z.strictObject({
    enabled: z.boolean(),
    /** The pool is emptied after every this many iterations (periodic reset, Table 5: 10). */
    resetEvery: positiveInt.max(1_000_000),
    /** Verified problems enter the pool when their solver success rate is at most this (code: 1.0, all). */
    maxSuccessRate: probability,
  }),
  /** More `<answer>` or `</answer>` tags than this multiply the solver's reward by `tagSpamFactor` (§2). */
  answerTagLimit: positiveInt,
  tagSpamFactor: probability,
  /**
   * Solver advantages within the group of n: `grpo_std` divides by the unbiased group std as verl does
   * (§2 [C], which the paper's numbers come from); `mean` is Eq. 4's r − mean.
   */
  solverAdvantage: z.enum(['grpo_std', 'mean']),
});

export type SspParams = z.output<typeof sspParams>;

export const SSP_DEFAULTS = {
  answers: 'test/fixtures/ssp/answers.jsonl',
  defaultSearchTurns: 2,
  maxTurns: 10,
  proposerTemperature: 1.0,
  rules: {
    minChars: 10,
    maxChars: 1000,
    minWords: 10,
    minSearches: 2,
    banAnswerInQueries: false,
    requireSearchTurns: false,
  },
  ragVerification: true,
  noiseBlocks: 4,
  verifier: { temperature: 0.1, maxTokens: 70 },
  judge: { temperature: 0.1, maxTokens: 10 },
  replay: { enabled: true, resetEvery: 10, maxSuccessRate: 1.0 },
  answerTagLimit: 10,
  tagSpamFactor: 0.25,
  solverAdvantage: 'grpo_std',
} satisfies z.input<typeof sspParams>;

/**
 * Run-config defaults SSP sets for the shared fields (§3, Table 4): B = 256 answers, n = 5 solver rollouts,
 * 150–200 steps, temperature 1.0, 8192 response tokens per trajectory, top-3 retrieval; PPO-clip with
 * clip_high 0.285, KL loss 0.01, token-mean, lr 1e-6 with 5 warm-up steps. The advantages are fixed per
 * role by the paper (GRPO solver, REINFORCE proposer), so only the `grpo` estimator is accepted.
 */
export const sspPreset = {
  iterations: 200,
  batchSize: 256,
  groupSize: 5,
  shardSize: 32,
  /** The RAG verifier and the judge are LLM calls: judging runs on the rollout pool. */
  judgePool: 'rollout',
  sampling: { temperature: 1.0, topP: 1.0, maxTokens: 8192 },
  retrieval: { topK: 3 },
  training: {
    estimator: 'grpo',
    loss: {
      type: 'ppo_clip',
      normalization: 'token_mean',
      normalizerConstant: 8192,
      clipLow: 0.2,
      clipHigh: 0.285,
      klCoef: 0.01,
      /** Entropy coef 0 (the paper's verl config). */
      entropyCoef: 0,
    },
    optimizer: {
      learningRate: 1e-6,
      schedule: 'warmup_constant',
      warmupSteps: 5,
      maxGradNorm: 1.0,
      weightDecay: 0.01,
    },
    /**
     * Table 4: global batch 256, mini-batch 128 (prompts, verl's unit: a solver prompt brings its n = 5
     * rollouts), one epoch; the code's two sequential actor updates (`combine_update=false`), proposer first:
     * 2 proposer steps, then 2 solver steps.
     */
    update: { miniBatchPrompts: 128, epochs: 1, roleOrder: ['proposer', 'solver'] },
  },
} as const;
