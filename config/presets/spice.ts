/**
 * SPICE preset (docs/recipes/spice.md): B=128 documents, G=8 for both roles, N≤1024 Challenger attempts,
 * ρ=−0.1, temperature 1.0, Dr.GRPO with PPO-clip, lr 1e-6 constant, β=0.
 * Values the paper leaves open follow Oat's Dr.GRPO defaults (ε=0.2, top_p=1, 3000-token generations).
 */
import { z } from 'zod';

const positiveInt = z.number().int().positive();

/** The `spice` section of a run config. */
export const spiceParams = z.strictObject({
  /** N: Challenger attempts per document, in rounds of G, before the document counts as without a valid task. */
  maxAttempts: positiveInt.max(100_000),
  /** ρ: the Challenger's reward for an invalid task. */
  invalidPenalty: z.number().max(0),
  /** The Challenger's reward for a valid task: the paper's Gaussian, or the baselines' curricula (ablations). */
  challengerReward: z.enum(['gaussian', 'absolute_zero', 'threshold', 'r_zero']),
  /** τ: the width of the Gaussian reward around the target variance. */
  tau: z.number().positive(),
  /** σ²_opt: the variance of the Reasoner's 0/1 outcomes the Gaussian rewards most (0.25: a 50% pass rate). */
  targetVariance: z.number().positive().max(0.25),
  /** mixed: the type-selection call decides; mcq / free_form force one format. */
  taskFormats: z.enum(['mixed', 'mcq', 'free_form']),
  /** The Reasoner's prompt: a Qwen chat with a system message, or OctoThinker's plain preamble. */
  reasonerTemplate: z.enum(['qwen', 'octothinker']),
  /** Tries of the type-selection call (MCQ or free form) before falling back to MCQ, counted in the metrics. */
  typeSelectionAttempts: positiveInt.max(10),
  /**
   * Reject a task whose question asks for a plain integer sum or difference and whose answer is not its value
   * (activities/recipes/spice/arithmetic.ts). Not in the paper; off by default. The toy world turns it on, where
   * a small Challenger and Reasoner otherwise collude on wrong answers.
   */
  refuteArithmeticAnswers: z.boolean(),
  /**
   * Reject a task whose answer is not stated in its document (as a whole word or number). Not in the paper,
   * whose Challenger grounds its answers by itself; off by default. The toy world turns it on: its Challenger
   * otherwise collapses onto a few questions it knows to be valid, whatever the document.
   */
  requireAnswerInDocument: z.boolean(),
  /** Zero-advantage rows add nothing under Dr.GRPO's constant normaliser; dropping them only saves compute. */
  dropZeroAdvantage: z.boolean(),
});

export const SPICE_DEFAULTS = {
  maxAttempts: 1024,
  invalidPenalty: -0.1,
  challengerReward: 'gaussian',
  tau: 0.01,
  targetVariance: 0.25,
  taskFormats: 'mixed',
  reasonerTemplate: 'qwen',
  typeSelectionAttempts: 3,
  dropZeroAdvantage: false,
  refuteArithmeticAnswers: false,
  requireAnswerInDocument: false,
} as const;

/** Run-config defaults SPICE sets for the shared fields. */
export const spicePreset = {
  iterations: 640,
  batchSize: 128,
  groupSize: 8,
  /** SPICE's verifiers are rules (Math-Verify-style), so judging is CPU work for the orchestrator pool. */
  judgePool: 'orchestrator',
  sampling: { temperature: 1.0, topP: 1.0, maxTokens: 3000 },
  training: {
    estimator: 'dr_grpo',
    loss: {
      type: 'ppo_clip',
      normalization: 'dr_grpo',
      normalizerConstant: 3000,
      clipLow: 0.2,
      clipHigh: 0.2,
      klCoef: 0,
      /** The spec's loss (Dr.GRPO's PPO-clip) has no entropy term. */
      entropyCoef: 0,
    },
    optimizer: { learningRate: 1e-6, schedule: 'constant', warmupSteps: 0, maxGradNorm: 1.0, weightDecay: 0 },
    /**
     * "128 trajectories per gradient update" (the paper's table) over Oat's rollout of 128 prompts × G: 16
     * prompts of G = 8 rollouts per optimizer step, one PPO epoch (Oat's default). A Challenger prompt's
     * rows and a Reasoner task's rows are one prompt each, so at another G the steps hold 16·G rows.
     */
    update: { miniBatchPrompts: 16, epochs: 1, roleOrder: [] },
  },
} as const;
