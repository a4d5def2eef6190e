/**
 * SPELL preset (docs/recipes/spell.md): one policy as questioner, responder and verifier over document
 * clusters; G=8 responses and 8 verifier votes, history memory L=3 with m=5 new documents, a Gaussian
 * questioner reward (σ = 0.5/3), role-specific sampling (N=128 responder groups, 1:1 questioner negatives,
 * verifier groups at 0.125 of the responder trajectories), one on-policy token-mean step, β=0, lr 2e-6.
 */
import { z } from 'zod';

const positiveInt = z.number().int().positive();
const weight = z.number().min(0);

/** The `spell` section of a run config. */
export const spellParams = z.strictObject({
  /** L: (docs, q, a) entries kept per (cluster, task) (§1). 0 turns history off (the "w/o history" ablation). */
  historySize: z.number().int().min(0).max(100),
  /** m: documents the questioner gets without history, and new documents added to the history's (§1.2). */
  newDocuments: positiveInt.max(1000),
  /** Which history pushes: `paper` for 0 < r̄ < 1, `code` for 0.01 ≤ r̄ ≤ 1 (includes all-correct) (§1.9). */
  historyRule: z.enum(['paper', 'code']),
  /** The document field naming its cluster; documents without it are grouped by a hash of their id. */
  clusterField: z.string().min(1),
  /** The document field naming the task its cluster serves (general_qa, multiple_choice, financial_math). */
  taskField: z.string().min(1),
  /** Target cluster size when documents carry no cluster field (§5: about 20 documents per cluster). */
  hashClusterSize: positiveInt.max(10_000),
  /** Relative frequency of each task in a batch (§1.1: 1:1:1). A task at 0 is never asked. */
  taskWeights: z.strictObject({ general_qa: weight, multiple_choice: weight, financial_math: weight }),
  /** N: the most responder groups with std > 0 trained per step (§1.10). */
  responderGroups: positiveInt.max(100_000),
  /**
   * Rounds of `batchSize` items a step may gather until N responder groups with std > 0 exist (§1.10; the
   * code stops after 10). 1: a single round. A step that still has fewer after the last round trains on
   * what it gathered instead of failing as the code does: one hard step should not end a multi-day run
   * (the `responderGroups` and `rounds` metrics show the shortfall). A run starts only if every round's shards
   * fit one iteration's Temporal history (config/temporal-limits.ts): 69 rounds of the preset's 15 shards, 16
   * of 64; the refusal names the most that fit.
   */
  maxRounds: positiveInt.max(100),
  /** Verifier groups trained = ⌊responder trajectories × ratio / G⌋ (§4: 1024 × 0.125 / 8 = 16). */
  verifierRatio: z.number().min(0).max(100),
  /** Verifier groups are eligible when their agreement with the majority lies in [min, max] (§4). */
  verifierAgreement: z
    .strictObject({ min: z.number().min(0).max(1), max: z.number().min(0).max(1) })
    .refine((a) => a.min <= a.max, { message: 'min must not exceed max' }),
  /** Keep only verifier groups whose majority agrees with the rule check (§4, `maj_cons`; ablation: off). */
  verifierConsistency: z.boolean(),
  /** Ask the verifier at all; without it r_res = R_rule (the "w/o verifier" ablation). */
  useVerifier: z.boolean(),
  /** The no-document grounding probe (§1.5; the "w/o grounding filter" ablation turns it off). */
  groundingFilter: z.boolean(),
  /** Questioner reward for a solvable question: the paper's Gaussian, or the AZR / R-Zero mappings (§2). */
  questionerReward: z.enum(['gaussian', 'absolute_zero', 'r_zero']),
  /** σ of the Gaussian questioner reward (§2; ablations 0.5/6 and 0.5/2). */
  sigma: z.number().positive(),
  badFormatPenalty: z.number().max(0),
  ungroundedPenalty: z.number().max(0),
  /** General-QA reference answers longer than this many tokens are discarded without penalty (§1.4). */
  maxAnswerTokens: positiveInt,
  /** A responder prompt longer than this skips the question (§1.6). */
  maxPromptTokens: positiveInt,
  /** Roles whose samples are not trained (the "frozen questioner / verifier" ablations). */
  frozenRoles: z.array(z.enum(['questioner', 'responder', 'verifier'])),
});

export type SpellParams = z.output<typeof spellParams>;

export const SPELL_DEFAULTS = {
  historySize: 3,
  newDocuments: 5,
  historyRule: 'paper',
  clusterField: 'cluster',
  taskField: 'task',
  hashClusterSize: 20,
  taskWeights: { general_qa: 1, multiple_choice: 1, financial_math: 1 },
  responderGroups: 128,
  maxRounds: 10,
  verifierRatio: 0.125,
  verifierAgreement: { min: 0.51, max: 0.99 },
  verifierConsistency: true,
  useVerifier: true,
  groundingFilter: true,
  questionerReward: 'gaussian',
  sigma: 0.5 / 3,
  badFormatPenalty: -1,
  ungroundedPenalty: -0.5,
  maxAnswerTokens: 40,
  maxPromptTokens: 18_000,
  frozenRoles: [],
} as const;

/**
 * Run-config defaults SPELL sets for the shared fields. batchSize is the generation batch of one round (the
 * code draws 480 (cluster, task) items per round, for up to `maxRounds` rounds, to find N=128 solvable groups). Advantages are fixed by the paper per role
 * (§3: group z-scores for responder and verifier, a per-task batch z-score for the questioner), so the
 * recipe accepts only the `grpo` estimator. Strictly on-policy with one step per batch, the PPO ratio is 1
 * and the clip (ε = 0.2, verl's default) never acts.
 */
export const spellPreset = {
  iterations: 70,
  batchSize: 480,
  groupSize: 8,
  /** The verifier is the policy itself: judging is LLM work for the rollout pool. */
  judgePool: 'rollout',
  sampling: { temperature: 0.7, topP: 0.95, maxTokens: 4096 },
  training: {
    estimator: 'grpo',
    loss: {
      type: 'ppo_clip',
      normalization: 'token_mean',
      normalizerConstant: 4096,
      clipLow: 0.2,
      clipHigh: 0.2,
      klCoef: 0,
      /** §3: entropy coefficient 0. */
      entropyCoef: 0,
    },
    optimizer: {
      learningRate: 2e-6,
      schedule: 'constant',
      warmupSteps: 0,
      maxGradNorm: 1.0,
      weightDecay: 0.01,
    },
    /** §3: strictly on-policy, one gradient step over the union of the roles' batches (mini-batch = batch). */
    update: { miniBatchPrompts: 'all', epochs: 1, roleOrder: [] },
  },
} as const;
