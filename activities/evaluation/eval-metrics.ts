import type { EvalResult } from '../../contracts/evaluation';
import { metrics } from '../lib/metrics';

/** What held-out evaluation reports to the worker's Prometheus endpoint (activities/lib/metrics.ts). */
const accuracy = metrics.gauge(
  'selfplay_eval_accuracy',
  'Held-out accuracy (mean share of correct samples per item) of the last evaluated version, by recipe, policy and benchmark',
);
const passAt = metrics.gauge(
  'selfplay_eval_pass_at_k',
  'Unbiased pass@k of the last evaluated version, by recipe, policy, benchmark and k (when n > 1)',
);
const majAt = metrics.gauge(
  'selfplay_eval_maj_at_k',
  'maj@k of the last evaluated version, by recipe, policy, benchmark and k (when n > 1)',
);
const evaluatedVersion = metrics.gauge(
  'selfplay_eval_version',
  'The policy version the selfplay_eval_* gauges describe, by recipe, policy and benchmark',
);
const itemsTotal = metrics.counter(
  'selfplay_eval_items_total',
  'Benchmark items scored, by recipe, benchmark and whether their verdicts were sampled or read back from storage',
);

export function recordEvalMetrics(recipe: string, result: EvalResult): void {
  const { policy, version } = result;
  for (const [benchmark, b] of Object.entries(result.benchmarks)) {
    const labels = { recipe, policy, benchmark };
    accuracy.set(labels, b.accuracy);
    evaluatedVersion.set(labels, version);
    for (const [k, v] of Object.entries(b.passAtK)) passAt.set({ ...labels, k }, v);
    for (const [k, v] of Object.entries(b.majAtK)) majAt.set({ ...labels, k }, v);
    itemsTotal.inc({ recipe, benchmark, source: 'sampled' }, b.items - b.reusedItems);
    itemsTotal.inc({ recipe, benchmark, source: 'stored' }, b.reusedItems);
  }
}
