import {
  versionsOf,
  type FilterResult,
  type IterationMetrics,
  type IterationSummary,
  type PipelineMetrics,
  type PolicySet,
  type ShardStageResult,
  type StageName,
  type StageTiming,
  type UpdateResult,
} from '../contracts/selfplay';
import type { EvalResult } from '../contracts/evaluation';

/**
 * What an iteration reports once its stages are done: the manifest's metrics and artifact list and the
 * summary the run keeps, as pure functions of the stages' results (no Temporal), so they are unit-tested.
 */

/** The held-out evaluations an iteration made: of its commit, and of the version the run started from. */
export interface IterationEvaluations {
  evaluated?: EvalResult;
  startScore?: EvalResult;
}

/** The summary the run keeps of a committed iteration (its `recent` list, the UI's table, search attributes). */
export function iterationSummary(
  filtered: Pick<FilterResult, 'metrics' | 'rows'>,
  { evaluated, startScore }: IterationEvaluations,
  seconds: number,
): IterationSummary {
  const roles = Object.values(filtered.metrics.meanRewardByRole);
  const skipped = filtered.metrics.extra.skippedContextLength;
  return {
    validTaskRate: filtered.metrics.validTaskRate,
    meanReward: roles.length ? roles.reduce((a, b) => a + b, 0) / roles.length : 0,
    meanRewardByRole: filtered.metrics.meanRewardByRole,
    zeroAdvantageFraction: filtered.metrics.zeroAdvantageFraction,
    rows: filtered.rows,
    seconds,
    ...(skipped ? { skippedContextLength: skipped } : {}),
    ...(evaluated ? { heldOutAccuracy: accuracyByBenchmark(evaluated) } : {}),
    ...(startScore ? { startAccuracy: accuracyByBenchmark(startScore) } : {}),
  };
}

/** What an iteration's stages measured, as its manifest records it. */
export interface IterationMeasures {
  filtered: Pick<FilterResult, 'metrics'>;
  updates: UpdateResult[];
  stages: Partial<Record<StageName, StageTiming>>;
  stageResults: ShardStageResult[];
  /** Rounds planned, for a recipe that gathers rounds; undefined otherwise. */
  rounds: number | undefined;
  evaluations: IterationEvaluations;
  pipeline: PipelineMetrics;
}

export function iterationMetrics(m: IterationMeasures): IterationMetrics {
  const { evaluated, startScore } = m.evaluations;
  return {
    recipe: m.filtered.metrics,
    train: Object.fromEntries(m.updates.filter((u) => u.applied).map((u) => [u.policy, u.train])),
    stages: m.stages,
    reusedUnits: m.stageResults.reduce((sum, r) => sum + r.reusedUnits, 0),
    ...(m.rounds !== undefined ? { rounds: m.rounds } : {}),
    ...(evaluated ? { eval: evaluated } : {}),
    ...(startScore ? { evalAtStart: startScore } : {}),
    pipeline: m.pipeline,
  };
}

/** Which versions sampled (`behaviour`) and which the update started from (`base`), and how far apart. */
export function pipelineMetrics(
  maxStaleness: number,
  behaviour: PolicySet,
  base: PolicySet,
  waitSeconds: number,
): PipelineMetrics {
  const behaviourVersions = versionsOf(behaviour);
  const baseVersions = versionsOf(base);
  const lags = Object.keys(baseVersions).map((p) => (baseVersions[p] ?? 0) - (behaviourVersions[p] ?? 0));
  return { maxStaleness, behaviourVersions, baseVersions, staleness: Math.max(0, ...lags), waitSeconds };
}

/** The manifest's artifact list: every shard output by stage and the batches, each list sorted. */
export function artifactKeys(results: ShardStageResult[], batchKeys: string[]): Record<string, string[]> {
  const out: Record<string, string[]> = { batch: [...batchKeys] };
  for (const r of results) (out[r.stage] ??= []).push(r.key);
  for (const keys of Object.values(out)) keys.sort();
  return out;
}

const accuracyByBenchmark = (result: EvalResult): Record<string, number> =>
  Object.fromEntries(Object.entries(result.benchmarks).map(([name, b]) => [name, b.accuracy]));
