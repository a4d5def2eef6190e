/**
 * SCOPE preset (docs/recipes/scope.md): a Challenger that searches the corpus from a source document and
 * writes a long-form task, a Solver that answers it through multi-turn search without the document, and a
 * frozen judge (the base model M0) that gates tasks, writes 3–5 rubrics and grades every rollout against
 * each rubric. G = 8 for both roles, GRPO (group z-scores), PPO-clip ε = 0.2 with a k3 KL to M0 at
 * β = 1e-3, lr 1e-6 (§2, Table 9).
 */
import { z } from 'zod';

const weight = z.number().min(0);
const positiveInt = z.number().int().positive();
const probability = z.number().min(0).max(1);

/** The Challenger's task types (§1, §4); creative writing is defined by the paper but excluded. */
export const SCOPE_TASK_TYPES = ['long_form_qa', 'summarisation', 'planning', 'writing'] as const;
export type ScopeTaskType = (typeof SCOPE_TASK_TYPES)[number];

/** The `scope` section of a run config. */
export const scopeParams = z.strictObject({
  /**
   * Task types drawn uniformly per document (§1.1: the mix is [U], uniform chosen). Leaving one out is the
   * paper's leave-one-domain-out ablation.
   */
  taskTypes: z.array(z.enum(SCOPE_TASK_TYPES)).min(1),
  /** Relative shares of Challenger search budgets 1, 2 and 3 in a batch (§1.1: stratified 4:3:2). */
  searchTurnWeights: z
    .tuple([weight, weight, weight])
    .refine((w) => w.some((x) => x > 0), { message: 'at least one weight must be positive' }),
  /**
   * How the policy asks for a search (§3): `<search>query</search>` (Qwen2.5, Search-R1) or a Qwen3
   * `<tool_call>`. `<task>`, `<answer>` and all judge I/O are XML either way.
   */
  searchSyntax: z.enum(['search_tags', 'qwen3_tool_call']),
  /** Searches the Solver may make (§3: [U] for training; the examples show 4, evaluation allows 5). */
  solverMaxSearches: positiveInt.max(20),
  /**
   * What a Challenger whose task fails a quality gate gets (§1.6, [!]): `eq4` is 0.5·r_fmt (Eq. 4 with the
   * gate indicator at 0), `algorithm1` is r_fmt ("format only").
   */
  gateFailReward: z.enum(['eq4', 'algorithm1']),
  /** Stage-2 task selection (§1 stage 2, §2 Filter): a task trains the Solver iff min ≤ ḡ ≤ max. */
  taskSelection: z
    .strictObject({ min: probability, max: probability })
    .refine((s) => s.min <= s.max, { message: 'min must not exceed max' }),
  /** L(a), the cosine penalty on answer tokens (Eq. 6): 1 up to `softTokens`, `floor` from `hardTokens`. */
  lengthPenalty: z
    .strictObject({ softTokens: positiveInt, hardTokens: positiveInt, floor: probability })
    .refine((l) => l.softTokens < l.hardTokens, { message: 'softTokens must be below hardTokens' }),
  /** Rubrics kept per task (§4: "3-5"); a judge output with fewer is dropped, extra ones are cut. */
  rubrics: z
    .strictObject({ min: positiveInt.max(20), max: positiveInt.max(20) })
    .refine((r) => r.min <= r.max, { message: 'min must not exceed max' }),
  /**
   * The rubric writer's `## Context Documents` (§4, [U]): the source document only, or also the passages
   * the Challenger retrieved (its task is meant to need facts from every search turn).
   */
  rubricContext: z.enum(['source', 'source_and_retrieved']),
  /**
   * The training schedule (§1). `stages`, the paper's: rounds of K Challenger steps against the frozen
   * Solver, then K Solver steps on freshly selected tasks; each run iteration is one step of one stage
   * (iteration n: round ⌊(n−1)/2K⌋+1, the Challenger's stage for its first K). `joint`: both policies step
   * every iteration, the Solver on the tasks of the Challenger's own rollouts.
   */
  schedule: z.strictObject({
    mode: z.enum(['stages', 'joint']),
    /** K: steps of each stage per round (20 in the paper). */
    stageSteps: positiveInt.max(100_000),
    /** Tasks a Solver step trains on (Table 9: 256 unique prompts), G rollouts each. */
    solverTasks: positiveInt.max(100_000),
    /** N_filter: Solver rollouts whose ḡ selects a candidate task in the Solver's stage (4 in the paper). */
    filterRollouts: z.number().int().min(1).max(256),
    /**
     * Fresh documents, one candidate task each, per round of a Solver step's selection ([U]: the paper's
     * batches hold 200–500 candidates); rounds go on until `solverTasks` tasks are kept. Unset, 256, or with
     * shards of fewer than 4 as many as 64 shards hold (64 × shardSize); a set value needing more than 64
     * shards is refused at the first plan.
     */
    candidatesPerRound: positiveInt.max(100_000),
    /**
     * Rounds a Solver step gathers at most; one still short trains on the tasks it kept (`solverTasks` shows
     * it). A run starts only if every round's shards fit one iteration's Temporal history
     * (config/temporal-limits.ts): 32 rounds of the preset's 32 shards, 16 of 64; the refusal names the most.
     */
    maxRounds: positiveInt.max(100),
  }),
  /** The frozen judge's decoding per call (§2 "Judge settings"; the gates' decoding is [U]: greedy). */
  judgeSampling: z.strictObject({
    gate: z.strictObject({ temperature: z.number().min(0).max(2), maxTokens: positiveInt }),
    rubrics: z.strictObject({ temperature: z.number().min(0).max(2), maxTokens: positiveInt }),
    grade: z.strictObject({ temperature: z.number().min(0).max(2), maxTokens: positiveInt }),
  }),
});

export type ScopeParams = z.output<typeof scopeParams>;

export const SCOPE_DEFAULTS = {
  taskTypes: [...SCOPE_TASK_TYPES],
  searchTurnWeights: [4, 3, 2],
  searchSyntax: 'search_tags',
  solverMaxSearches: 4,
  gateFailReward: 'eq4',
  taskSelection: { min: 0.2, max: 0.8 },
  lengthPenalty: { softTokens: 1024, hardTokens: 2048, floor: 0.05 },
  rubrics: { min: 3, max: 5 },
  rubricContext: 'source',
  schedule: {
    mode: 'stages',
    stageSteps: 20,
    solverTasks: 256,
    filterRollouts: 4,
    candidatesPerRound: 256,
    maxRounds: 4,
  },
  judgeSampling: {
    gate: { temperature: 0, maxTokens: 4096 },
    rubrics: { temperature: 0, maxTokens: 8192 },
    grade: { temperature: 0.6, maxTokens: 16_384 },
  },
} satisfies z.input<typeof scopeParams>;

/**
 * The `joint` schedule of one step per iteration for both policies: how SCOPE trained before the schedule
 * existed, so what an iteration input recorded then gets (contracts/input-upgrade.ts).
 */
export const SCOPE_JOINT_SCHEDULE: ScopeParams['schedule'] = {
  mode: 'joint',
  stageSteps: 1,
  solverTasks: 1,
  filterRollouts: 1,
  candidatesPerRound: 1,
  maxRounds: 1,
};

/**
 * `candidatesPerRound` for a run that does not set it: the preset's, or as many as `maxShards` shards of
 * `shardSize` hold when that is fewer, so a run with small shards plans its Solver steps' rounds.
 */
export const defaultCandidatesPerRound = (shardSize: number, maxShards: number): number =>
  Math.min(SCOPE_DEFAULTS.schedule.candidatesPerRound, maxShards * shardSize);

/**
 * Run-config defaults SCOPE sets for the shared fields (Table 9): 64 source documents per Challenger step (its
 * unique prompts), G = 8, 120 iterations (T = 3 rounds of 20 Challenger and 20 Solver steps), responses up
 * to 8192 tokens, GRPO, PPO-clip ε = 0.2 (verl's default, [U]), β = 1e-3, lr 1e-6 with warm-up (0.03 of a
 * policy's 60 steps ≈ 2, counted in that policy's own steps), gradient clip 1.0. The rollout temperature is
 * [U]: 1.0. Judging is LLM work (the frozen judge), so it runs on the rollout pool. Each document is heavy
 * (G Challenger trajectories, up to G² Solver trajectories, their gradings), hence small shards.
 */
export const scopePreset = {
  iterations: 120,
  batchSize: 64,
  groupSize: 8,
  shardSize: 8,
  judgePool: 'rollout',
  sampling: { temperature: 1.0, topP: 1.0, maxTokens: 8192 },
  /** §3: the top 3 passages per search, at most 500 tokens in total (not 500 per passage). */
  retrieval: { topK: 3, responseTokens: 500 },
  training: {
    /**
     * Two policies (§2): the Challenger and the Solver, each with its own weights, steps and versions; the
     * judge is the frozen base model on its own endpoint (`inference.roles.judge` with `frozen: true`).
     */
    policies: { challenger: { roles: ['challenger'] }, solver: { roles: ['solver'] } },
    estimator: 'grpo',
    loss: {
      type: 'ppo_clip',
      normalization: 'token_mean',
      normalizerConstant: 8192,
      clipLow: 0.2,
      clipHigh: 0.2,
      klCoef: 1e-3,
      /** The paper leaves the entropy term unstated [U]; verl's default is none. */
      entropyCoef: 0,
    },
    optimizer: {
      learningRate: 1e-6,
      schedule: 'warmup_constant',
      warmupSteps: 2,
      maxGradNorm: 1.0,
      weightDecay: 0.01,
    },
    /**
     * Epochs and mini-batches are [U]: verl's defaults, a mini-batch of 256 prompts and one epoch, which make
     * one step of the Challenger's 64 prompts and one of the Solver's 256 tasks.
     */
    update: { miniBatchPrompts: 256, epochs: 1, roleOrder: [] },
  },
} as const;
