import type { Recipe } from '../types';
import { planMae } from './plan';
import { proposeMae } from './propose';
import { gateMae } from './gate';
import { excludedQuestionKeys } from './pools';
import { solveMae } from './solve';
import { judgeMae } from './judge';
import { filterMae } from './filter';
import type { MaeGated, MaeJudged, MaePlanUnit, MaeProposal, MaeSolved, MaeState } from './records';

/**
 * MAE (docs/recipes/mae.md): one policy as Proposer, Solver and Judge, a question pool D grown through the
 * Judge's quality gate and a pair pool P, kept as the recipe state. Stages: plan draws each unit's
 * reference, Solver question and Judge pair from the committed pools; propose writes and quality-scores a
 * question; gate applies the 0.7 threshold; solve answers; judge scores and trains the Judge; filter rewards
 * every role and grows the pools.
 */
export const maeRecipe: Recipe<MaeProposal, MaeGated, MaeSolved, MaeJudged, MaePlanUnit, MaeState> = {
  name: 'mae',
  plan: planMae,
  propose: proposeMae,
  gate: async (ctx, plan, proposals) =>
    gateMae(ctx.config.mae, plan, proposals, await excludedQuestionKeys(ctx.config.mae)),
  solve: solveMae,
  judge: judgeMae,
  filter: filterMae,
  summarize(stage, records): Record<string, number> {
    switch (stage) {
      case 'propose': {
        const r = records as MaeProposal[];
        return { proposals: r.length, questions: r.filter((p) => p.question !== undefined).length };
      }
      case 'gate': {
        const r = records as MaeGated[];
        return {
          accepted: r.filter((g) => g.accepted).length,
          rejected: r.filter((g) => !g.accepted).length,
        };
      }
      case 'solve':
        return {
          completions: (records as MaeSolved[]).reduce(
            (n, s) => n + 1 + (s.difficulty?.completions.length ?? 0),
            0,
          ),
        };
      case 'judge': {
        const r = records as MaeJudged[];
        const scores = r.flatMap((j) => [...(j.difficultyScores ?? []), j.solverScore]);
        return {
          scores: scores.length,
          fallbacks: scores.filter((s) => s.fallback).length,
          evaluations: r.filter((j) => j.judge).length,
        };
      }
    }
  },
};
