import type { Recipe } from '../types';
import { planScope } from './plan';
import { proposeScope } from './propose';
import { gateScope } from './gate';
import { solveScope } from './solve';
import { judgeScope } from './judge';
import { filterScope } from './filter';
import { scopeSolverSearch } from './search';
import { scopeAccumulation, scopeStep } from './schedule';
import type { ScopeGated, ScopeJudged, ScopeProposal, ScopeSolved, ScopeUnit } from './records';

/**
 * SCOPE (docs/recipes/scope.md): a Challenger searches from a source document and writes a task, a Solver
 * answers it by searching without the document, a frozen judge gates, writes rubrics and grades.
 * Stages: plan = (document, task type, search budget); propose = G Challenger trajectories, the judge's
 * gates and rubrics; gate = verdicts and Solver prompts; solve = G Solver trajectories per valid task;
 * judge = one grading call per rollout and rubric; filter = R_C, task selection, R_S, GRPO advantages.
 * The Challenger's rows have role `challenger`, the Solver's `solver`, each trained by its own policy. Under
 * the paper's schedule (schedule.ts) an iteration is a step of one stage: the Challenger's, or the Solver's,
 * which gathers rounds of fresh candidates until it has kept its tasks.
 */
export const scopeRecipe: Recipe<ScopeProposal, ScopeGated, ScopeSolved, ScopeJudged, ScopeUnit> = {
  name: 'scope',
  plan: planScope,
  propose: proposeScope,
  gate: (ctx, plan, proposals) => Promise.resolve(gateScope(ctx.config, plan, proposals)),
  solve: solveScope,
  judge: judgeScope,
  filter: filterScope,
  solverSearch: scopeSolverSearch,
  accumulation: scopeAccumulation,
  schedule: scopeStep,
  summarize(stage, records): Record<string, number> {
    switch (stage) {
      case 'propose': {
        const candidates = (records as ScopeProposal[]).flatMap((p) => p.candidates);
        return {
          candidates: candidates.length,
          tasks: candidates.filter((c) => c.task !== undefined).length,
          gated: candidates.filter((c) => c.gates).length,
          withRubrics: candidates.filter((c) => (c.rubrics?.items.length ?? 0) > 0).length,
        };
      }
      case 'gate': {
        const candidates = (records as ScopeGated[]).flatMap((g) => g.candidates);
        const counts: Record<string, number> = {};
        for (const c of candidates) counts[c.status] = (counts[c.status] ?? 0) + 1;
        return counts;
      }
      case 'solve':
        return {
          rollouts: (records as ScopeSolved[]).reduce(
            (n, s) => n + s.candidates.reduce((m, c) => m + c.trajectories.length, 0),
            0,
          ),
        };
      case 'judge': {
        const candidates = (records as ScopeJudged[]).flatMap((j) => j.candidates);
        const grades = candidates.flatMap((c) =>
          [...c.rollouts, ...(c.training?.rollouts ?? [])].flatMap((r) => r.grades),
        );
        return {
          gradings: grades.length,
          fallbacks: grades.filter((g) => g.fallback).length,
          keptTasks: candidates.filter((c) => c.training).length,
        };
      }
    }
  },
};
