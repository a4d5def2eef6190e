import { createHash } from 'node:crypto';
import type { BatchRef, FilterResult, IterationStageInput } from '../../contracts/selfplay';
import type { RunConfig } from '../../config/schema';
import type { TrainingRow } from '../clients/trainer-contract';
import { policyNames, trainedPolicyOf } from '../../config/policies';
import type { ActivityDeps } from './deps';
import { recipeFor } from './deps';
import { readShard } from './shard-units';
import { loadRecipeState, saveRecipeState } from './recipe-state';
import { getJson, putJson, putJsonl } from '../clients/storage/codec';
import { batchKey, filterSummaryKey } from '../clients/storage/keys';
import type { ShardRecords, Unit, PlanUnit } from '../recipes/types';
import { recordFilterMetrics } from './stage-metrics';
import { requireBehaviourLogprobs } from './behaviour-logprobs';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import { withoutSkippedUnits } from './skipped-units';

/**
 * Waits for nothing but its input: every shard's records. Leaves out the units a stage skipped (a prompt over
 * the model's context, skipped-units.ts) and counts them in `extra.skippedContextLength`. Computes rewards and advantages (the recipe's
 * filter), refuses rows without the behaviour log-probs the loss reads (behaviour-logprobs.ts), writes one
 * training batch per trained policy (rows go to the policy that plays their role, with the version it sampled
 * them at), then a summary; the summary's presence means the batches are complete, so a retry returns it
 * instead of rewriting.
 * Orchestrator pool.
 */
export function filterActivities(deps: ActivityDeps) {
  const { store } = deps;
  return {
    async filter(input: IterationStageInput): Promise<FilterResult> {
      const t0 = Date.now();
      const { config, runId, iteration } = input;
      const summaryKey = filterSummaryKey(runId, iteration);
      const existing = await getJson<FilterResult>(store, summaryKey);
      if (existing) return existing;

      const stored = await Promise.all(
        input.shards.map(async (shard): Promise<ShardRecords<Unit, Unit, Unit, Unit>> => {
          const read = <T>(stage: string) => readShard<T>(store, runId, iteration, stage, shard);
          const [plan, propose, gate, solve, judge] = await Promise.all([
            read<PlanUnit>('plan'),
            read<Unit>('propose'),
            read<Unit>('gate'),
            read<Unit>('solve'),
            read<Unit>('judge'),
          ]);
          return { shard, plan, propose, gate, solve, judge };
        }),
      );
      const kept = stored.map(withoutSkippedUnits);
      const shards = kept.map((k) => k.shard);
      const skippedContextLength = kept.reduce((n, k) => n + k.skipped, 0);
      const state = await loadRecipeState(store, input.recipeStateKey);
      const out = await recipeFor(deps, config).filter({ config, runId, iteration, state }, shards);
      const { rows } = out;
      const metrics = skippedContextLength
        ? { ...out.metrics, extra: { ...out.metrics.extra, skippedContextLength } }
        : out.metrics;
      const trained = rowsByPolicy(config, rows, input.versions);
      requireBehaviourLogprobs(config, [...trained.values()].flat());
      // The next state and the batches are written before the summary, so a summary always has them.
      const nextStateKey =
        out.state === undefined ? undefined : await saveRecipeState(store, runId, iteration, out.state);
      const batches: Record<string, BatchRef> = {};
      for (const [policy, policyRows] of trained) {
        const key = batchKey(runId, iteration, policy);
        const bytes = await putJsonl(store, key, policyRows);
        batches[policy] = {
          key,
          uri: store.uri(key),
          rows: policyRows.length,
          sha256: createHash('sha256').update(bytes).digest('hex'),
        };
      }
      const summary: FilterResult = {
        batches,
        rows: rows.length,
        ...(nextStateKey ? { recipeStateKey: nextStateKey } : {}),
        metrics,
        seconds: (Date.now() - t0) / 1000,
      };
      await putJson(store, summaryKey, summary);
      recordFilterMetrics(config.recipe, summary);
      return summary;
    },
  };
}

/**
 * Each trained policy's rows, in batch order; every policy gets an entry, empty or not. A row trains the policy
 * that plays its role, which sampled it at `versions` (the iteration's), and carries that version
 * (`behaviourVersion`): with `pipeline.maxStaleness` ≥ 1 it may be older than the version the row trains, and
 * the kernel reports and bounds the difference. Under the `negateAdvantages` control the rows carry the
 * opposite advantage (the recipe's metrics keep the true one); the rows of an ablated role (`ablateRoles`) are
 * left out.
 */
export function rowsByPolicy(
  config: RunConfig,
  rows: readonly TrainingRow[],
  versions: Readonly<Record<string, number>>,
): Map<string, TrainingRow[]> {
  const out = new Map(policyNames(config).map((name) => [name, [] as TrainingRow[]]));
  const sign = config.training.negateAdvantages ? -1 : 1;
  const ablated = new Set(config.training.ablateRoles);
  for (const row of rows.filter((r) => !ablated.has(r.role))) {
    const policy = trainedPolicyOf(config, row.role);
    const behaviourVersion = versions[policy];
    if (behaviourVersion === undefined) {
      throw nonRetryable(
        NON_RETRYABLE.invalidInput,
        `versions: no version of policy "${policy}", which sampled the rows of role "${row.role}"`,
      );
    }
    out.get(policy)?.push({ ...row, advantage: sign * row.advantage, behaviourVersion });
  }
  return out;
}
