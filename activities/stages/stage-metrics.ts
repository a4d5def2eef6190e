import type { FilterResult } from '../../contracts/selfplay';
import type { TrainStepMetrics } from '../clients/trainer-contract';
import { metrics } from '../lib/metrics';

/** What the stages report to the worker's Prometheus endpoint (activities/lib/metrics.ts). */
const stageSeconds = metrics.histogram(
  'selfplay_stage_seconds',
  'Duration of one stage activity (a shard of propose/gate/solve/judge, or the filter), by recipe and stage',
);
const meanReward = metrics.gauge(
  'selfplay_mean_reward',
  'Mean reward per role in the last filtered iteration, by recipe and role',
);
const validTaskRate = metrics.gauge(
  'selfplay_valid_task_rate',
  'Share of proposed tasks that passed every check in the last filtered iteration, by recipe',
);
const zeroAdvantage = metrics.gauge(
  'selfplay_zero_advantage_fraction',
  'Share of training rows with zero advantage in the last filtered iteration, by recipe',
);
const batchRows = metrics.counter(
  'selfplay_training_rows_total',
  'Training rows written by the filter stage, by recipe and role',
);
const policyEntropy = metrics.gauge(
  'selfplay_policy_entropy',
  "Mean next-token entropy (nats) over the last training step's loss tokens, by recipe, policy and row role",
);
const iterationsFiltered = metrics.counter(
  'selfplay_iterations_filtered_total',
  'Iterations whose filter stage completed in this process, by recipe',
);
const unitsSkipped = metrics.counter(
  'selfplay_units_skipped_total',
  "Planned units left out of an iteration because a prompt exceeded the model's context, by recipe",
);

export function recordStageSeconds(recipe: string, stage: string, seconds: number): void {
  stageSeconds.observe({ recipe, stage }, seconds);
}

export function recordFilterMetrics(recipe: string, result: FilterResult): void {
  const m = result.metrics;
  recordStageSeconds(recipe, 'filter', result.seconds);
  iterationsFiltered.inc({ recipe });
  validTaskRate.set({ recipe }, m.validTaskRate);
  zeroAdvantage.set({ recipe }, m.zeroAdvantageFraction);
  for (const [role, r] of Object.entries(m.meanRewardByRole)) meanReward.set({ recipe, role }, r);
  for (const [role, n] of Object.entries(m.rowsByRole)) batchRows.inc({ recipe, role }, n);
  if (m.extra.skippedContextLength) unitsSkipped.inc({ recipe }, m.extra.skippedContextLength);
}

export function recordTrainMetrics(recipe: string, policy: string, step: TrainStepMetrics): void {
  for (const [role, h] of Object.entries(step.entropyByRole ?? {}))
    policyEntropy.set({ recipe, policy, role }, h);
}
