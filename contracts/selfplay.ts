import type { RunConfig } from '../config/schema';
import type { Lineage } from './lineage';
import type { EvalResult } from './eval-result';

/**
 * Messages that cross the workflow boundary, version 2 (version 1 carried one policy's version and refs at
 * the top level; version 2 carries a `PolicySet`, one entry per trained policy). Only references (storage
 * keys) and small summaries travel here; anything large lives in storage. Manifests of version 1 are read
 * as a one-policy set (see `policiesOfManifest`).
 */

export type StageName =
  | 'sync'
  | 'plan'
  | 'propose'
  | 'gate'
  | 'solve'
  | 'judge'
  | 'filter'
  | 'update'
  /** Held-out evaluation of the new commit, and of the version the run starts from (config `evaluation`). */
  | 'eval'
  | 'evalStart'
  | 'commit';

/** A published sampler snapshot of one policy version (written by the kernel's publish). */
export interface WeightSnapshot {
  policy: string;
  version: number;
  uri: string;
  format: 'lora' | 'full';
  /**
   * The sha256 of its weights (the kernel's publish answers it): weight sync keys copies, adapter names and
   * loads by it, so weights published again at the same URI are never served as these. Absent in snapshots
   * committed before digests (and from kernels before them): the URI and version alone name the weights.
   */
  sha256?: string;
}

/**
 * One trained policy as committed: its version (training steps applied), its checkpoint (to restore the
 * kernel) and its sampler snapshot (to sync inference servers).
 */
export interface PolicyCommit {
  version: number;
  checkpointUri?: string;
  snapshot?: WeightSnapshot;
}

/** Every trained policy of a run by name; a run of one policy has one entry. */
export type PolicySet = Record<string, PolicyCommit>;

/** The version of each policy: what rollouts sample from and endpoints name. */
export const versionsOf = (policies: PolicySet): Record<string, number> =>
  Object.fromEntries(Object.entries(policies).map(([name, p]) => [name, p.version]));

/** The weights' digest of each policy whose snapshot names one (`WeightSnapshot.sha256`). */
export const digestsOf = (
  snapshots: ReadonlyArray<WeightSnapshot | undefined> = [],
): Record<string, string> =>
  Object.fromEntries(snapshots.flatMap((s) => (s?.sha256 ? [[s.policy, s.sha256] as const] : [])));

/** `policy v3` for one policy, `challenger v3 · solver v2` for several. */
export const versionsText = (versions: Record<string, number>): string =>
  Object.entries(versions)
    .map(([name, v]) => `${name} v${v}`)
    .join(' · ');

/**
 * The iteration input's version: 3 since its config carries every field the iteration and its activities read
 * (older inputs are brought to it by contracts/input-upgrade.ts, at the workflow's entry).
 */
export const ITERATION_INPUT_VERSION = 3;

export interface IterationInput {
  v: typeof ITERATION_INPUT_VERSION;
  runId: string;
  iteration: number;
  config: RunConfig;
  /** The policies rollouts sample from (the last committed versions). */
  policies: PolicySet;
  /** Key of the recipe's persistent state as committed by the previous iteration, if any. */
  recipeStateKey?: string;
  /** Also evaluate the version the iteration starts from: the run's first iteration with `evaluation.atStart`. */
  evaluateStart?: boolean;
  /**
   * Started while the previous iteration had not committed (`pipeline.maxStaleness` ≥ 1): it samples with
   * `policies` (their snapshots are published and served already) without touching the trainer, which the
   * previous iteration is using, and filters and trains only once the parent sends that iteration's commit
   * (`baseCommittedSignal`).
   */
  overlaps?: true;
}

/** The commit an overlapping iteration trains from: the previous iteration's, sent by the parent. */
export interface BaseCommit {
  iteration: number;
  policies: PolicySet;
  recipeStateKey?: string;
}

export interface PlanResult {
  shards: Array<{ shard: number; documents: number }>;
  corpus: { segments: number; skipped: Record<string, number> };
  seconds: number;
  /** Present when the recipe gathers rounds (see `Accumulation`). */
  accumulation?: Accumulation;
}

/**
 * A recipe that gathers its batch over rounds (SPELL's accumulator, DAPO-style dynamic sampling): after a
 * round's shards are judged, another round is planned while the judge shards' `metric` (summed over every
 * round) is below `target`, for at most `maxRounds` rounds. The filter then sees every round's shards.
 */
export interface Accumulation {
  metric: string;
  target: number;
  maxRounds: number;
}

/** Where a further round's units go: after every shard and unit (docIndex) of the rounds before it. */
export interface PlanRound {
  index: number;
  firstShard: number;
  firstDocIndex: number;
}

export interface ShardStageInput {
  runId: string;
  iteration: number;
  shard: number;
  config: RunConfig;
  /** The version of each policy this shard samples from. */
  versions: Record<string, number>;
  /** The recipe state committed by the previous iteration, if the recipe keeps one. */
  recipeStateKey?: string;
  /** What every inference server must serve while this shard samples (when weights are synced), per policy. */
  snapshots?: WeightSnapshot[];
}

export interface ShardStageResult {
  stage: StageName;
  shard: number;
  /** The shard's output object. */
  key: string;
  units: number;
  /** Units taken from storage instead of recomputed (a retried or replayed shard). */
  reusedUnits: number;
  seconds: number;
  metrics: Record<string, number>;
}

export interface IterationStageInput {
  runId: string;
  iteration: number;
  config: RunConfig;
  versions: Record<string, number>;
  shards: number[];
  recipeStateKey?: string;
}

/** What the filter stage measured, per iteration; kept small on purpose (the filter's result carries it into the iteration's history). */
export interface RecipeMetrics {
  documents: number;
  /** Share of Challenger/proposer trajectories whose task passed every check. */
  validTaskRate: number;
  invalidReasons: Record<string, number>;
  /** passRateHistogram[k] = tasks whose G answers had k correct. */
  passRateHistogram: number[];
  zeroAdvantageFraction: number;
  meanRewardByRole: Record<string, number>;
  rowsByRole: Record<string, number>;
  extra: Record<string, number>;
}

/** One policy's training batch, by reference. */
export interface BatchRef {
  key: string;
  uri: string;
  rows: number;
  sha256: string;
}

export interface FilterResult {
  /** Each trained policy's batch (an empty one too, so every policy's update is decided by its rows). */
  batches: Record<string, BatchRef>;
  rows: number;
  recipeStateKey?: string;
  metrics: RecipeMetrics;
  seconds: number;
}

export interface UpdateInput {
  runId: string;
  iteration: number;
  config: RunConfig;
  policy: string;
  /** The policy as committed: the batch was sampled from this version. */
  committed: PolicyCommit;
  batch: BatchRef;
}

export interface UpdateResult {
  policy: string;
  /** The policy after the step (as committed before it when the batch was empty). */
  committed: PolicyCommit;
  /** The step is in the weights (applied by this attempt or an earlier one); false when it was skipped. */
  applied: boolean;
  skipped?: 'empty_batch';
  train: Record<string, number>;
  seconds: number;
}

export interface StageTiming {
  /** From the first shard's start to the last shard's end, in workflow time. */
  wallSeconds: number;
  /** Sum of the stage's activity durations. */
  busySeconds: number;
}

export interface IterationMetrics {
  recipe: RecipeMetrics;
  /** The training step's metrics per policy (loss, kl, gradNorm, ...); a skipped policy has none. */
  train: Record<string, Record<string, number>>;
  stages: Partial<Record<StageName, StageTiming>>;
  reusedUnits: number;
  /** Rounds planned, for a recipe that gathers rounds. */
  rounds?: number;
  /** Held-out accuracy of the committed version, when the iteration evaluated it (`evaluation.every`). */
  eval?: EvalResult;
  /** Held-out accuracy of the version the run started from (`evaluation.atStart`, its first iteration). */
  evalAtStart?: EvalResult;
  /** Which versions sampled and which trained (absent in manifests from before `pipeline`). */
  pipeline?: PipelineMetrics;
}

/** The behaviour version of every batch and how stale it was when trained (config `pipeline`). */
export interface PipelineMetrics {
  maxStaleness: number;
  /** Per policy: the version its rollouts were sampled with (the behaviour policy). */
  behaviourVersions: Record<string, number>;
  /** Per policy: the committed version its update started from. */
  baseVersions: Record<string, number>;
  /** The largest base − behaviour version over the policies: 0 in a synchronous iteration. */
  staleness: number;
  /** Seconds the iteration's rollouts were done before the previous iteration's commit let it train. */
  waitSeconds: number;
}

export interface CommitInput {
  runId: string;
  iteration: number;
  config: RunConfig;
  policies: PolicySet;
  recipeStateKey?: string;
  metrics: IterationMetrics;
  artifacts: Record<string, string[]>;
}

export interface CommitResult {
  manifestKey: string;
  /** The committed manifest's `configHash`. */
  configHash?: string;
}

/** What the run's retention after a commit gets (`training.retention`, activities/stages/retention.ts). */
export interface RetentionInput {
  /** Every lineage of the run, the current one last. */
  lineages: Lineage[];
  /** The newest commit of the run (on its current path), durable before retention starts. */
  head: number;
  retention: RunConfig['training']['retention'];
  /** `pipeline.maxStaleness`: iterations in flight sample the snapshots of up to this many commits back. */
  maxStaleness: number;
}

/** Logs a lineage's commits to the run's experiment trackers (config `tracking`, activities/tracking/). */
export interface TrackInput {
  runId: string;
  /** Every lineage of the run, the current one last: its commits are logged. */
  lineages: Lineage[];
  config: RunConfig;
  /** The newest commit: every commit of the lineage up to it that a tracker lacks is logged. */
  iteration: number;
}

export interface TrackResult {
  /** Per tracker, the steps read and offered to it (it logs the ones it does not hold yet). */
  offered: Record<string, number[]>;
}

export interface RetentionResult {
  /** The checkpoints and snapshots deleted (their prefixes). */
  deleted: string[];
}

export interface PublishInput {
  runId: string;
  config: RunConfig;
  policy: string;
  committed: PolicyCommit;
}

export interface SyncInput {
  config: RunConfig;
  snapshot: WeightSnapshot;
}

export interface SyncResult {
  servers: Array<{ server: string; ok: boolean; version?: number; reason?: string }>;
  seconds: number;
}

/** The child's result: small enough to keep the last few in the parent's state. */
export interface IterationResult {
  iteration: number;
  policies: PolicySet;
  manifestKey: string;
  /** The hash of the config this iteration ran with, as in its manifest. */
  configHash?: string;
  recipeStateKey?: string;
  summary: IterationSummary;
}

export interface IterationSummary {
  validTaskRate: number;
  meanReward: number;
  meanRewardByRole: Record<string, number>;
  zeroAdvantageFraction: number;
  rows: number;
  seconds: number;
  /** Units left out because one of their prompts exceeded the model's context; absent: none. */
  skippedContextLength?: number;
  /** Held-out accuracy by benchmark of the version this iteration committed, when it was evaluated. */
  heldOutAccuracy?: Record<string, number>;
  /** Held-out accuracy by benchmark of the version the run started from (`evaluation.atStart`). */
  startAccuracy?: Record<string, number>;
}

/** What a committed manifest says; written by `commit`, read on resume. */
/**
 * Where an iteration stands in a recipe's staged schedule (SCOPE's rounds of a Challenger stage, then a Solver
 * stage): a pure function of the config and the iteration number, so a resumed run is where it was.
 */
export interface ScheduleStep {
  /** The stage this iteration is a step of; only its policy trains. */
  stage: string;
  /** The round (the paper's iteration t), from 1. */
  round: number;
  /** The step within the stage in this round, from 1. */
  stageIteration: number;
}

export interface Manifest {
  v: 2;
  runId: string;
  iteration: number;
  recipe: string;
  /** Present when the recipe runs a staged schedule. */
  schedule?: ScheduleStep;
  policies: PolicySet;
  recipeStateKey?: string;
  configHash: string;
  metrics: IterationMetrics;
  artifacts: Record<string, string[]>;
  committedAt: string;
}

/** Where a run starts: after the last committed iteration of itself or of the run it resumes. */
export interface RunStart {
  nextIteration: number;
  policies: PolicySet;
  recipeStateKey?: string;
  resumedFrom?: { runId: string; iteration: number };
  /** Hash of the run's config (for the memo); the config of the last commit once there is one. */
  configHash?: string;
  /** The run's lineages once it has rolled back (contracts/lineage.ts); absent: one lineage, the run id. */
  lineages?: Lineage[];
}

/**
 * The carry's version: 1, its first (a carry recorded without `v` is version 1). A change to its shape
 * raises it and brings older carries forward in `upgradeRunCarry` (contracts/input-upgrade.ts).
 */
export const RUN_CARRY_VERSION = 1;

/** State carried across continue-as-new. */
export interface RunCarry extends RunStart {
  v: typeof RUN_CARRY_VERSION;
  recent: IterationResult[];
  /** The run was paused when it continued as new: it stays paused. */
  paused?: boolean;
  /** A stop was accepted before the run continued as new: the continued run completes at once. */
  stopRequested?: boolean;
}
