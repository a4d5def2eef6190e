import type { RecipeContext } from '../types';
import type { Trajectory } from '../../tools/types';
import { SCOPE_CALLS } from '../../clients/llm-protocol';
import { searchTrajectory, solverTurns } from './search';
import { isSolverStep } from './schedule';
import { SOLVER, type ScopeGated, type ScopeSolved } from './records';

/**
 * Stage 1, step 5b (scope.md §1): G Solver trajectories for every valid task (N_train = G, whose ḡ rewards
 * the Challenger); in a Solver step (stage 2, step 2) the N_filter = `filterRollouts` trajectories whose ḡ
 * selects the task. The Solver sees the question only, never the document, and may search up to
 * `solverMaxSearches` times before its `<answer>`.
 */
export async function solveScope(ctx: RecipeContext, gated: ScopeGated): Promise<ScopeSolved> {
  const { config, iteration } = ctx;
  const n = isSolverStep(config, iteration) ? config.scope.schedule.filterRollouts : config.groupSize;
  const candidates = await Promise.all(
    gated.candidates.map(async (c, k) => {
      if (c.status !== 'valid' || !c.solverMessages) return { trajectories: [] };
      const messages = c.solverMessages;
      const trajectories = await Promise.all(
        Array.from({ length: n }, (_, j) =>
          solverTrajectory(ctx, gated, messages, `solver-${k}-${j}`, [k, j]),
        ),
      );
      return { trajectories };
    }),
  );
  return { unit: gated.unit, docIndex: gated.docIndex, candidates };
}

/** One Solver trajectory of a task, checkpointed under `name` of its unit, seeded by (document, …parts). */
export function solverTrajectory(
  ctx: RecipeContext,
  gated: ScopeGated,
  messages: NonNullable<ScopeGated['candidates'][number]['solverMessages']>,
  name: string,
  parts: Array<string | number>,
): Promise<Trajectory> {
  return searchTrajectory(ctx, {
    role: SOLVER,
    call: SCOPE_CALLS.solver,
    messages,
    finalTags: ['answer'],
    maxTurns: solverTurns(ctx.config),
    checkpoint: { unit: gated.unit, name },
    seedParts: ['scope-solver', gated.docIndex, ...parts],
  });
}
