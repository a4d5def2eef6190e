import { Context } from '@temporalio/activity';
import type { ShardStageInput, ShardStageResult } from '../../contracts/selfplay';
import type { ActivityDeps } from './deps';
import { recipeContext, recipeFor } from './deps';
import { createOrReadShard, readShard, runShardUnits } from './shard-units';
import { loadRecipeState } from './recipe-state';
import { getJsonl } from '../clients/storage/codec';
import { shardKey } from '../clients/storage/keys';
import type { AnyRecipe, PlanDocument, RecipeContext, Unit } from '../recipes/types';
import { recordStageSeconds } from './stage-metrics';
import { ensureServersAt } from './sync';
import { isSkipped, skipOverLongUnit, splitSkipped } from './skipped-units';

type UnitStage = 'propose' | 'solve' | 'judge';

/** Whether a stage calls the inference servers: propose and solve always, judge when it runs LLM judges. */
const samples = (stage: UnitStage, input: ShardStageInput): boolean =>
  stage !== 'judge' || input.config.judgePool === 'rollout';

/**
 * The four per-shard stages. Each reads the shard's earlier outputs by key, runs the recipe's part of the
 * stage, and writes its own output; only the key and a few numbers go back to the workflow.
 */
export function shardStageActivities(deps: ActivityDeps) {
  const { store } = deps;
  const read = <T>(input: ShardStageInput, stage: string): Promise<T[]> =>
    readShard<T>(store, input.runId, input.iteration, stage, input.shard);

  const summary = (
    stage: ShardStageResult['stage'] & ('gate' | UnitStage),
    input: ShardStageInput,
    startedMs: number,
    out: { key: string; records: Unit[]; reusedUnits: number },
  ): ShardStageResult => {
    const seconds = (Date.now() - startedMs) / 1000;
    recordStageSeconds(input.config.recipe, stage, seconds);
    const { kept, skipped } = splitSkipped(out.records);
    return {
      stage,
      shard: input.shard,
      key: out.key,
      units: out.records.length,
      reusedUnits: out.reusedUnits,
      seconds,
      metrics: {
        ...recipeFor(deps, input.config).summarize(stage, kept),
        ...(skipped ? { skippedContextLength: skipped } : {}),
      },
    };
  };

  /**
   * A stage whose units (documents) run concurrently and are stored one by one as they finish. A unit an
   * earlier stage skipped keeps its skip record; one whose prompt does not fit the context gets one here.
   */
  async function unitStage(
    stage: UnitStage,
    input: ShardStageInput,
    inputsOf: () => Promise<Unit[]>,
    work: (recipe: AnyRecipe, ctx: RecipeContext) => (unit: Unit) => Promise<Unit>,
    skippedBefore: (unit: Unit) => Unit | undefined = (unit) => (isSkipped(unit) ? unit : undefined),
  ): Promise<ShardStageResult> {
    const startedMs = Date.now();
    const recipe = recipeFor(deps, input.config);
    if (samples(stage, input)) {
      const signal = Context.current().cancellationSignal;
      for (const snapshot of input.snapshots ?? [])
        await ensureServersAt(deps, input.config, snapshot, signal);
    }
    const ctx = recipeContext(
      deps,
      input,
      stage,
      Context.current().cancellationSignal,
      await loadRecipeState(store, input.recipeStateKey),
    );
    const out = await runShardUnits({
      store,
      ...input,
      stage,
      inputs: await inputsOf(),
      // Each unit listens on the shard's signal, which also aborts when a sibling unit fails for good.
      work: async (unit, signal) =>
        skippedBefore(unit) ??
        (await skipOverLongUnit(unit.unit, stage, () => work(recipe, { ...ctx, signal })(unit))),
    });
    return summary(stage, input, startedMs, out);
  }

  return {
    /** The policy writes tasks from each sampled document. Rollout pool. */
    propose: (input: ShardStageInput): Promise<ShardStageResult> =>
      unitStage(
        'propose',
        input,
        () => read<PlanDocument>(input, 'plan'),
        (recipe, ctx) => (doc) => recipe.propose(ctx, doc),
      ),

    /** Validity, leakage and duplicate checks over the whole shard at once. Orchestrator pool. */
    async gate(input: ShardStageInput): Promise<ShardStageResult> {
      const startedMs = Date.now();
      const key = shardKey(input.runId, input.iteration, 'gate', input.shard);
      const existing = await getJsonl<Unit>(store, key);
      if (existing)
        return summary('gate', input, startedMs, { key, records: existing, reusedUnits: existing.length });
      const [plan, proposals] = await Promise.all([
        read<PlanDocument>(input, 'plan'),
        read<Unit>(input, 'propose'),
      ]);
      const ctx = recipeContext(
        deps,
        input,
        'gate',
        Context.current().cancellationSignal,
        await loadRecipeState(store, input.recipeStateKey),
      );
      // The recipe checks the proposals it wrote; a skipped unit keeps its skip record in its place.
      const kept = proposals.filter((p) => !isSkipped(p));
      const keptUnits = new Set(kept.map((p) => p.unit));
      const gated = (await recipeFor(deps, input.config).gate(
        ctx,
        plan.filter((u) => keptUnits.has(u.unit)),
        kept,
      )) as Unit[];
      const next = gated.values();
      const records = await createOrReadShard(
        store,
        key,
        proposals.map((p) => (isSkipped(p) ? p : (next.next().value as Unit))),
      );
      return summary('gate', input, startedMs, { key, records, reusedUnits: 0 });
    },

    /** G rollouts of every task that passed the gate. Rollout pool. */
    solve: (input: ShardStageInput): Promise<ShardStageResult> =>
      unitStage(
        'solve',
        input,
        () => read<Unit>(input, 'gate'),
        (recipe, ctx) => (gated) => recipe.solve(ctx, gated),
      ),

    /** Verifiers and judges score every rollout: orchestrator pool for rule verifiers, rollout pool for LLM judges. */
    async judge(input: ShardStageInput): Promise<ShardStageResult> {
      const solved = new Map((await read<Unit>(input, 'solve')).map((s) => [s.unit, s]));
      const skippedIn = (gated: Unit): Unit | undefined => [gated, solved.get(gated.unit)].find(isSkipped);
      return unitStage(
        'judge',
        input,
        () => read<Unit>(input, 'gate'),
        (recipe, ctx) => (gated) => recipe.judge(ctx, gated, solved.get(gated.unit)),
        skippedIn,
      );
    },
  };
}
