import { createHash } from 'node:crypto';
import type { FilterResult, IterationStageInput } from '../../workflows/contracts';
import type { ActivityDeps } from './deps';
import { recipeFor } from './deps';
import { readShard } from './shard-units';
import { loadRecipeState, saveRecipeState } from './recipe-state';
import { getJson, putJson, putJsonl } from '../clients/storage/codec';
import { batchKey } from '../clients/storage/keys';
import type { ShardRecords, Unit, PlanUnit } from '../recipes/types';
import { recordFilterMetrics } from './stage-metrics';

/**
 * Waits for nothing but its input: every shard's records. Computes rewards and advantages (the recipe's
 * filter), writes the training batch, then a summary next to it; the summary's presence means the batch is
 * complete, so a retry returns it instead of rewriting. Orchestrator pool.
 */
export function filterActivities(deps: ActivityDeps) {
  const { store } = deps;
  return {
    async filter(input: IterationStageInput): Promise<FilterResult> {
      const t0 = Date.now();
      const { config, runId, iteration } = input;
      const key = batchKey(runId, iteration, config.training.policy);
      const summaryKey = key.replace(/\.jsonl\.gz$/, '.summary.json');
      const existing = await getJson<FilterResult>(store, summaryKey);
      if (existing) return existing;

      const shards = await Promise.all(
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
      const state = await loadRecipeState(store, input.recipeStateKey);
      const out = await recipeFor(deps, config).filter({ config, runId, iteration, state }, shards);
      const { rows, metrics } = out;
      // The next state is written before the batch summary, so a summary always has its state.
      const nextStateKey =
        out.state === undefined ? undefined : await saveRecipeState(store, runId, iteration, out.state);
      const bytes = await putJsonl(store, key, rows);
      const summary: FilterResult = {
        batchKey: key,
        batchUri: store.uri(key),
        rows: rows.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
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
