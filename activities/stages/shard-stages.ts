import { Context } from '@temporalio/activity';
import type { ShardStageInput, ShardStageResult } from '../../workflows/contracts';
import type { ActivityDeps } from './deps';
import { recipeContext, recipeFor } from './deps';
import { readShard, runShardUnits } from './shard-units';
import { getJsonl, putJsonl } from '../clients/storage/codec';
import { shardKey } from '../clients/storage/keys';
import type { PlanDocument, Unit } from '../recipes/types';

/**
 * The four per-shard stages. Each reads the shard's earlier outputs by key, runs the recipe's part of the
 * stage, and writes its own output; only the key and a few numbers go back to the workflow.
 */
export function shardStageActivities(deps: ActivityDeps) {
  const { store } = deps;
  const started = (): number => Date.now();
  const result = (
    stage: ShardStageResult['stage'],
    input: ShardStageInput,
    t0: number,
    out: { key: string; records: Unit[]; reusedUnits: number },
  ): ShardStageResult => ({
    stage,
    shard: input.shard,
    key: out.key,
    units: out.records.length,
    reusedUnits: out.reusedUnits,
    seconds: (Date.now() - t0) / 1000,
    metrics: recipeFor(deps, input.config).summarize(stage as 'propose', out.records),
  });
  const ctxFor = (input: ShardStageInput) => recipeContext(deps, input, Context.current().cancellationSignal);
  const read = <T>(input: ShardStageInput, stage: string) =>
    readShard<T>(store, input.runId, input.iteration, stage, input.shard);

  return {
    /** The policy writes tasks from each sampled document. Rollout pool. */
    async propose(input: ShardStageInput): Promise<ShardStageResult> {
      const t0 = started();
      const recipe = recipeFor(deps, input.config);
      const ctx = ctxFor(input);
      const plan = await read<PlanDocument>(input, 'plan');
      const out = await runShardUnits({
        store,
        ...input,
        stage: 'propose',
        inputs: plan,
        work: (doc) => recipe.propose(ctx, doc),
      });
      return result('propose', input, t0, out);
    },

    /** Validity, leakage and duplicate checks over the whole shard. Orchestrator pool. */
    async gate(input: ShardStageInput): Promise<ShardStageResult> {
      const t0 = started();
      const recipe = recipeFor(deps, input.config);
      const key = shardKey(input.runId, input.iteration, 'gate', input.shard);
      const existing = await getJsonl<Unit>(store, key);
      if (existing)
        return result('gate', input, t0, { key, records: existing, reusedUnits: existing.length });
      const [plan, proposals] = await Promise.all([
        read<PlanDocument>(input, 'plan'),
        read<Unit>(input, 'propose'),
      ]);
      const records: Unit[] = (await recipe.gate(ctxFor(input), plan, proposals)) as Unit[];
      await putJsonl(store, key, records);
      return result('gate', input, t0, { key, records, reusedUnits: 0 });
    },

    /** G rollouts of every task that passed the gate. Rollout pool. */
    async solve(input: ShardStageInput): Promise<ShardStageResult> {
      const t0 = started();
      const recipe = recipeFor(deps, input.config);
      const ctx = ctxFor(input);
      const gated = await read<Unit>(input, 'gate');
      const out = await runShardUnits({
        store,
        ...input,
        stage: 'solve',
        inputs: gated,
        work: (g) => recipe.solve(ctx, g),
      });
      return result('solve', input, t0, out);
    },

    /** Verifiers and judges score every rollout. Orchestrator pool for rule verifiers, rollout pool for LLM judges. */
    async judge(input: ShardStageInput): Promise<ShardStageResult> {
      const t0 = started();
      const recipe = recipeFor(deps, input.config);
      const ctx = ctxFor(input);
      const [gated, solved] = await Promise.all([read<Unit>(input, 'gate'), read<Unit>(input, 'solve')]);
      const solvedByUnit = new Map(solved.map((s) => [s.unit, s]));
      const out = await runShardUnits({
        store,
        ...input,
        stage: 'judge',
        inputs: gated,
        work: (g) => recipe.judge(ctx, g, solvedByUnit.get(g.unit)),
      });
      return result('judge', input, t0, out);
    },
  };
}
