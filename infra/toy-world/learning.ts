/**
 * A toy-world run read back from its manifests and batches as a learning curve: the held-out accuracy its
 * evaluation committed at version 0 and after every step, with the valid-task rate, the mean rewards, the
 * Reasoner pass rates and the kinds of task the Challenger wrote, per iteration. Shared by the learning
 * test, its controls and `npm run bench -- learning`.
 */
import { getJson, getJsonl } from '../../activities/clients/storage/codec';
import { batchKey, manifestKey } from '../../activities/clients/storage/keys';
import type { TrainingRow } from '../../activities/clients/trainer-contract';
import { openStore } from '../../activities/clients/storage';
import type { Manifest } from '../../contracts/selfplay';
import { TOY_WORLD_BENCHMARK, TOY_WORLD_POLICY } from './run-config';
import { sumKindOf, type SumKind } from './world';

export interface IterationPoint {
  iteration: number;
  /** Held-out accuracy of the version this iteration committed. */
  heldOutAccuracy: number;
  validTaskRate: number;
  meanRewardByRole: Record<string, number>;
  /** passRateHistogram[k]: tasks whose G Reasoner answers had k correct. */
  passRateHistogram: number[];
  /** Shares of the kinds among the valid tasks the Challenger wrote (one_plus_one, ...). */
  taskKinds: Partial<Record<SumKind, number>>;
}

export interface LearningCurve {
  runId: string;
  /** Held-out accuracy of the warm-started model (version 0). */
  startAccuracy: number;
  points: IterationPoint[];
  /** Held-out accuracy after the last iteration minus at the start, in percentage points. */
  gainPoints: number;
}

export async function readLearningCurve(
  storageUri: string,
  runId: string,
  iterations: number,
): Promise<LearningCurve> {
  const store = openStore(storageUri);
  const points: IterationPoint[] = [];
  let startAccuracy: number | undefined;
  for (let iteration = 1; iteration <= iterations; iteration++) {
    const manifest = await getJson<Manifest>(store, manifestKey(runId, iteration));
    if (!manifest) throw new Error(`${runId}: iteration ${iteration} has no manifest`);
    const { recipe, eval: evaluated, evalAtStart } = manifest.metrics;
    const accuracy = evaluated?.benchmarks[TOY_WORLD_BENCHMARK]?.accuracy;
    if (accuracy === undefined) throw new Error(`${runId}: iteration ${iteration} has no held-out accuracy`);
    startAccuracy ??= evalAtStart?.benchmarks[TOY_WORLD_BENCHMARK]?.accuracy;
    const rows = (await getJsonl<TrainingRow>(store, batchKey(runId, iteration, TOY_WORLD_POLICY))) ?? [];
    points.push({
      iteration,
      heldOutAccuracy: accuracy,
      validTaskRate: recipe.validTaskRate,
      meanRewardByRole: recipe.meanRewardByRole,
      passRateHistogram: recipe.passRateHistogram,
      taskKinds: taskKindShares(rows),
    });
  }
  if (startAccuracy === undefined) throw new Error(`${runId}: no held-out accuracy at version 0`);
  const last = points[points.length - 1]?.heldOutAccuracy ?? startAccuracy;
  return { runId, startAccuracy, points, gainPoints: 100 * (last - startAccuracy) };
}

/** The kinds of the sums the Challenger's rows ask for, among those that parse as a world question. */
function taskKindShares(rows: readonly TrainingRow[]): Partial<Record<SumKind, number>> {
  const kinds = rows
    .filter((r) => r.role === 'challenger')
    .flatMap((r) => {
      const kind = sumKindOf(r.completion);
      return kind ? [kind] : [];
    });
  const shares: Partial<Record<SumKind, number>> = {};
  for (const kind of kinds) shares[kind] = (shares[kind] ?? 0) + 1 / kinds.length;
  return shares;
}
