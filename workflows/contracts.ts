import type { RunConfig } from '../config/schema';
import type { Lineage } from './lineage';

/**
 * Messages that cross the workflow boundary, version 1. Only references (storage keys) and small summaries
 * travel here; anything large lives in storage. A breaking change adds a new version beside this one.
 */

export type StageName =
  'sync' | 'plan' | 'propose' | 'gate' | 'solve' | 'judge' | 'filter' | 'update' | 'commit';

/** A published sampler snapshot of one policy version (written by the kernel's publish). */
export interface WeightSnapshot {
  policy: string;
  version: number;
  uri: string;
  format: 'lora' | 'full';
}

/** Where the committed policy lives: its checkpoint (to restore the kernel) and its sampler snapshot. */
export interface PolicyRefs {
  checkpointUri?: string;
  snapshot?: WeightSnapshot;
}

export interface IterationInput extends PolicyRefs {
  v: 1;
  runId: string;
  iteration: number;
  config: RunConfig;
  /** The policy version rollouts sample from (the last committed one). */
  policyVersion: number;
  /** Key of the recipe's persistent state as committed by the previous iteration, if any. */
  recipeStateKey?: string;
}

export interface PlanResult {
  shards: Array<{ shard: number; documents: number }>;
  corpus: { segments: number; skipped: Record<string, number> };
  seconds: number;
}

export interface ShardStageInput {
  runId: string;
  iteration: number;
  shard: number;
  config: RunConfig;
  policyVersion: number;
  /** The recipe state committed by the previous iteration, if the recipe keeps one. */
  recipeStateKey?: string;
  /** The version every inference server must serve while this shard samples (when weights are synced). */
  snapshot?: WeightSnapshot;
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
  policyVersion: number;
  shards: number[];
  recipeStateKey?: string;
}

/** What the filter stage measured, per iteration; kept small on purpose (it is part of the child's result). */
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

export interface FilterResult {
  batchKey: string;
  batchUri: string;
  rows: number;
  sha256: string;
  recipeStateKey?: string;
  metrics: RecipeMetrics;
  seconds: number;
}

export interface UpdateInput extends Pick<PolicyRefs, 'checkpointUri'> {
  runId: string;
  iteration: number;
  config: RunConfig;
  policyVersion: number;
  batchUri: string;
  rows: number;
  sha256: string;
}

export interface UpdateResult extends PolicyRefs {
  policyVersion: number;
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
  train: Record<string, number>;
  stages: Partial<Record<StageName, StageTiming>>;
  reusedUnits: number;
}

export interface CommitInput extends PolicyRefs {
  runId: string;
  iteration: number;
  config: RunConfig;
  policyVersion: number;
  recipeStateKey?: string;
  metrics: IterationMetrics;
  artifacts: Record<string, string[]>;
}

export interface CommitResult {
  manifestKey: string;
  /** The committed manifest's `configHash`. */
  configHash?: string;
}

export interface PublishInput extends PolicyRefs {
  runId: string;
  config: RunConfig;
  version: number;
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
export interface IterationResult extends PolicyRefs {
  iteration: number;
  policyVersion: number;
  manifestKey: string;
  /** The hash of the config this iteration ran with, as in its manifest. */
  configHash?: string;
  recipeStateKey?: string;
  summary: IterationSummary;
  /** The full metrics, as committed in the manifest (a few KB). */
  metrics: IterationMetrics;
}

export interface IterationSummary {
  validTaskRate: number;
  meanReward: number;
  meanRewardByRole: Record<string, number>;
  zeroAdvantageFraction: number;
  rows: number;
  seconds: number;
}

/** What a committed manifest says; written by `commit`, read on resume. */
export interface Manifest extends PolicyRefs {
  v: 1;
  runId: string;
  iteration: number;
  recipe: string;
  policyVersion: number;
  recipeStateKey?: string;
  configHash: string;
  metrics: IterationMetrics;
  artifacts: Record<string, string[]>;
  committedAt: string;
}

/** Where a run starts: after the last committed iteration of itself or of the run it resumes. */
export interface RunStart extends PolicyRefs {
  nextIteration: number;
  policyVersion: number;
  recipeStateKey?: string;
  resumedFrom?: { runId: string; iteration: number };
  /** Hash of the run's config (for the memo); the config of the last commit once there is one. */
  configHash?: string;
  /** The run's lineages once it has rolled back (workflows/lineage.ts); absent: one lineage, the run id. */
  lineages?: Lineage[];
}

/** State carried across continue-as-new. */
export interface RunCarry extends RunStart {
  recent: IterationResult[];
  /** The run was paused when it continued as new: it stays paused. */
  paused?: boolean;
}
