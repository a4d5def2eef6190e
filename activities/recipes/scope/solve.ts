import type { RecipeContext } from '../types';
import { SCOPE_CALLS } from '../../clients/llm-protocol';
import { searchTrajectory } from './search';
import { SOLVER, type ScopeGated, type ScopeSolved } from './records';

/**
 * Stage 1, step 5b (scope.md §1): G Solver trajectories for every valid task. The Solver sees the question
 * only, never the document, and may search up to `solverMaxSearches` times before its `<answer>`.
 */
export async function solveScope(ctx: RecipeContext, gated: ScopeGated): Promise<ScopeSolved> {
  const { config } = ctx;
  const candidates = await Promise.all(
    gated.candidates.map(async (c, k) => {
      if (c.status !== 'valid' || !c.solverMessages) return { trajectories: [] };
      const messages = c.solverMessages;
      const trajectories = await Promise.all(
        Array.from({ length: config.groupSize }, (_, j) =>
          searchTrajectory(ctx, {
            role: SOLVER,
            call: SCOPE_CALLS.solver,
            messages,
            finalTags: ['answer'],
            maxTurns: config.scope.solverMaxSearches + 1,
            checkpoint: { unit: gated.unit, name: `solver-${k}-${j}` },
            seedParts: ['scope-solver', gated.docIndex, k, j],
          }),
        ),
      );
      return { trajectories };
    }),
  );
  return { unit: gated.unit, docIndex: gated.docIndex, candidates };
}
