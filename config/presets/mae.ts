/**
 * MAE preset (docs/recipes/mae.md): one policy as Proposer, Solver and Judge; B = 128 per role, 5 Solver
 * answers per proposed question, the 0.7 quality gate, ⅓/⅓/⅓ and ½/½ rewards, Task-Relative REINFORCE++
 * (advantages whitened per role over the batch), lr 1e-6, T = 1.0, top-p 1.0, no KL (§2.5, Table 3).
 */
import { z } from 'zod';
import { inputColumns } from '../input-columns';

const probability = z.number().min(0).max(1);
const weight = z.number().min(0);

/** The `mae` section of a run config. */
export const maeParams = z.strictObject({
  /** p_ref: the chance that a proposer prompt carries a reference question from D (§3: 0, 0.5 or 1). */
  referenceRatio: probability,
  /**
   * D0, `{"question": "..."}` records (a local path or s3://; JSONL, `.gz`, `.zst` or Parquet). Absent: the
   * zero setting's 16 built-in self-written questions.
   */
  seedQuestions: z.string().min(1).optional(),
  /**
   * Decontamination: `{"question": "..."}` records (read as `seedQuestions` is; e.g. a benchmark's
   * questions) that never enter D, compared as D compares questions. A proposal of one is still scored and rewarded; the gate
   * records it as rejected `excluded`.
   */
  excludeQuestions: z.string().min(1).optional(),
  /** The seed file's column for `question` when it has another name, e.g. `{"question": "prompt"}`. */
  seedColumns: inputColumns(['question']).optional(),
  /** A proposed question enters D when its quality score is at least this (§1 step 3). */
  qualityThreshold: probability,
  /** How the judge's X ∈ 1..10 becomes a score in [0, 1] (§2.1). */
  scoreMapping: z.enum(['(x-1)/9', 'x/10']),
  /** R_difficulty = 1 − R̄_S (the paper), or the reference code's binary 𝟙[R̄_S < 0.7]. */
  difficulty: z.enum(['linear', 'binary']),
  /** The reference code's variant: a gated-out question earns no difficulty term (and gets no Solver answers). */
  zeroDifficultyWhenRejected: z.boolean(),
  proposerWeights: z.strictObject({ quality: weight, difficulty: weight, format: weight }),
  solverWeights: z.strictObject({ judge: weight, format: weight }),
  /** Ablations (Table 2): the quality gate off admits every extracted question; the format reward off drops R_format. */
  qualityFilter: z.boolean(),
  formatReward: z.boolean(),
  /** Ablations: a frozen role still plays (its outputs feed the pools) but contributes no training rows. */
  trainRoles: z.strictObject({ proposer: z.boolean(), solver: z.boolean(), judge: z.boolean() }),
  /** |D| never exceeds this: once full, new questions are turned away (D never shrinks; the reference's 10000). */
  poolCap: z.number().int().positive().max(1_000_000),
  /** P keeps this many most recent pairs; the pools are recipe state, read by every stage of an iteration. */
  pairPoolCap: z.number().int().positive().max(1_000_000),
});

export type MaeParams = z.output<typeof maeParams>;

export const MAE_DEFAULTS = {
  referenceRatio: 0.5,
  qualityThreshold: 0.7,
  scoreMapping: '(x-1)/9',
  difficulty: 'linear',
  zeroDifficultyWhenRejected: false,
  proposerWeights: { quality: 1 / 3, difficulty: 1 / 3, format: 1 / 3 },
  solverWeights: { judge: 0.5, format: 0.5 },
  qualityFilter: true,
  formatReward: true,
  trainRoles: { proposer: true, solver: true, judge: true },
  poolCap: 10_000,
  pairPoolCap: 4_096,
} as const;

/** Run-config defaults MAE sets for the shared fields. */
export const maePreset = {
  iterations: 300,
  /** B: proposer prompts, solver questions and judge pairs per step, one of each per unit. */
  batchSize: 128,
  /** N_sample: Solver answers per proposed question for its difficulty (MAE has no groups of G). */
  groupSize: 5,
  /** Judging is LLM work (the Judge scores answers and the trained Judge writes evaluations). */
  judgePool: 'rollout',
  sampling: { temperature: 1.0, topP: 1.0, maxTokens: 8192 },
  training: {
    /** One batch per role: REINFORCE++ whitening over it is Task-Relative REINFORCE++ (§2.4). */
    estimator: 'reinforce_pp',
    loss: {
      /** veRL's actor loss: PPO-clip with ratio 0.2 (one epoch), token-mean aggregation. */
      type: 'ppo_clip',
      normalization: 'token_mean',
      normalizerConstant: 8192,
      clipLow: 0.2,
      clipHigh: 0.2,
      klCoef: 0,
      /** Table 3: entropy coefficient 0.001. */
      entropyCoef: 0.001,
    },
    /** AdamW, lr 1e-6 constant, grad clip 1.0 (Table 3); weight decay 0.01 is veRL's default (inferred). */
    optimizer: {
      learningRate: 1e-6,
      schedule: 'constant',
      warmupSteps: 0,
      maxGradNorm: 1.0,
      weightDecay: 0.01,
    },
    /**
     * The reference code's veRL mini-batch of 64 prompts (one rollout each) over the union of the three
     * roles' batches: 3 × 128 rows make 6 optimizer steps per iteration, one PPO epoch (Table 3). The paper
     * itself says "one synchronized update"; the mini-batch is the code's, hence several steps in it.
     */
    update: { miniBatchPrompts: 64, epochs: 1, roleOrder: [] },
  },
} as const;
