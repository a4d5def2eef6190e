import type { Manifest } from '../contracts/selfplay';
import type { BenchmarkResult } from '../contracts/evaluation';
import type { LineSeries } from './report-svg';

/**
 * Held-out accuracy as `selfplay report` shows it, from the manifests' `metrics.eval` (the committed version
 * of an iteration that evaluated) and `metrics.evalAtStart` (the version the run started from, drawn at the
 * iteration before its first).
 */

/** Each benchmark's evaluations as (iteration, result), in iteration order. */
function evaluations(manifests: readonly Manifest[]): Map<string, Array<[number, BenchmarkResult]>> {
  const out = new Map<string, Array<[number, BenchmarkResult]>>();
  const add = (iteration: number, benchmarks: Record<string, BenchmarkResult> | undefined): void => {
    for (const [name, result] of Object.entries(benchmarks ?? {}))
      out.set(name, [...(out.get(name) ?? []), [iteration, result]]);
  };
  for (const m of manifests) {
    add(m.iteration - 1, m.metrics?.evalAtStart?.benchmarks);
    add(m.iteration, m.metrics?.eval?.benchmarks);
  }
  for (const points of out.values()) points.sort((a, b) => a[0] - b[0]);
  return out;
}

/** One line per benchmark of `value` of its results, for the benchmarks that have it. */
function evalSeries(
  manifests: readonly Manifest[],
  value: (r: BenchmarkResult) => number | undefined,
): LineSeries[] {
  return [...evaluations(manifests)]
    .map(([name, points]) => ({
      name,
      points: points.flatMap(([iteration, r]): Array<[number, number]> => {
        const v = value(r);
        return v === undefined ? [] : [[iteration, v]];
      }),
    }))
    .filter((s) => s.points.length > 0);
}

/** One accuracy line per benchmark. */
export const evalAccuracySeries = (manifests: readonly Manifest[]): LineSeries[] =>
  evalSeries(manifests, (r) => r.accuracy);

/** Searches per answer, for the benchmarks an agentic evaluation scored (`evaluation.rollout: "search"`). */
export const evalSearchSeries = (manifests: readonly Manifest[]): LineSeries[] =>
  evalSeries(manifests, (r) => r.searchesPerAnswer);

export interface EvalColumn {
  header: string;
  /** The column's value in a manifest's row (its own evaluation, not the start's). */
  value: (m: Manifest) => number | undefined;
}

/**
 * The table's columns: accuracy per benchmark, plus pass@n and maj@n where a benchmark sampled n > 1, and
 * searches per answer where an agent searched.
 */
export function evalColumns(manifests: readonly Manifest[]): EvalColumn[] {
  const own = (m: Manifest, name: string): BenchmarkResult | undefined => m.metrics?.eval?.benchmarks?.[name];
  return [...evaluations(manifests)].flatMap(([name, points]) => {
    const n = Math.max(...points.map(([, r]) => r.n));
    const at = String(n);
    return [
      { header: `accuracy: ${name}`, value: (m: Manifest) => own(m, name)?.accuracy },
      ...(n > 1
        ? [
            { header: `pass@${n}: ${name}`, value: (m: Manifest) => own(m, name)?.passAtK?.[at] },
            { header: `maj@${n}: ${name}`, value: (m: Manifest) => own(m, name)?.majAtK?.[at] },
          ]
        : []),
      ...(points.some(([, r]) => r.searchesPerAnswer !== undefined)
        ? [{ header: `searches/answer: ${name}`, value: (m: Manifest) => own(m, name)?.searchesPerAnswer }]
        : []),
    ];
  });
}
