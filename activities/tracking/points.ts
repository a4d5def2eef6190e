import type { EvalResult } from '../../contracts/eval-result';
import type { Manifest } from '../../contracts/selfplay';

/**
 * What a tracker logs at one step: scalars by name and histograms by name (bucket k holds the count of value
 * k). Step n is committed iteration n; step 0 holds what was measured of the version the run started from.
 */
export interface TrackedPoint {
  step: number;
  /** Seconds since the epoch: the commit's time, so a point logged again is the same point. */
  wallTime: number;
  scalars: Record<string, number>;
  histograms: Record<string, number[]>;
}

/**
 * The points of one committed iteration, from its manifest: the start evaluation (step 0) when the iteration
 * made it, then the iteration's own. Names are `/`-separated paths of letters, digits, `.`, `_` and `-`, which
 * every tracker takes as they are.
 */
export function pointsOf(manifest: Manifest): TrackedPoint[] {
  const { metrics } = manifest;
  const wallTime = Date.parse(manifest.committedAt) / 1000;
  const start: TrackedPoint[] = metrics.evalAtStart
    ? [
        {
          step: 0,
          wallTime,
          scalars: { 'selfplay/iteration': 0, ...evalScalars(metrics.evalAtStart) },
          histograms: {},
        },
      ]
    : [];
  const recipe = metrics.recipe;
  const scalars: Record<string, number> = {
    'selfplay/iteration': manifest.iteration,
    'tasks/valid_rate': recipe.validTaskRate,
    'tasks/zero_advantage_fraction': recipe.zeroAdvantageFraction,
    'tasks/documents': recipe.documents,
    ...named('reward', recipe.meanRewardByRole),
    ...named('rows', recipe.rowsByRole),
    ...(metrics.eval ? evalScalars(metrics.eval) : {}),
  };
  for (const [policy, train] of Object.entries(metrics.train))
    Object.assign(scalars, named(`train/${policy}`, train));
  for (const [stage, timing] of Object.entries(metrics.stages)) {
    scalars[`stage/${stage}/wall_seconds`] = timing.wallSeconds;
    scalars[`stage/${stage}/busy_seconds`] = timing.busySeconds;
  }
  for (const [k, count] of recipe.passRateHistogram.entries()) scalars[`pass_rate/${k}_correct`] = count;
  const own: TrackedPoint = {
    step: manifest.iteration,
    wallTime,
    scalars,
    histograms: { 'tasks/pass_rate': [...recipe.passRateHistogram] },
  };
  return [...start, own];
}

const evalScalars = (result: EvalResult): Record<string, number> =>
  Object.fromEntries(
    Object.entries(result.benchmarks).map(([name, b]) => [`eval/${metricName(name)}/accuracy`, b.accuracy]),
  );

/** `{prefix}/{key}` for every finite value (a tracker refuses NaN and infinities). */
const named = (prefix: string, values: Record<string, number>): Record<string, number> =>
  Object.fromEntries(
    Object.entries(values)
      .filter(([, v]) => Number.isFinite(v))
      .map(([key, v]) => [`${prefix}/${metricName(key)}`, v]),
  );

/** A role, policy or benchmark name as a metric name segment: MLflow refuses other characters. */
const metricName = (name: string): string => name.replace(/[^A-Za-z0-9._-]/g, '_');
