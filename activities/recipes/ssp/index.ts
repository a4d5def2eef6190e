import type { Recipe } from '../types';
import { planSsp } from './plan';
import { proposeSsp } from './propose';
import { gateSsp } from './gate';
import { solveSsp } from './solve';
import { judgeSsp } from './judge';
import { filterSsp } from './filter';
import { sspSolverSearch } from './rollout';
import type { SspGated, SspJudged, SspProposal, SspSolved, SspState, SspUnit } from './records';

/**
 * SSP (docs/recipes/ssp.md): one policy proposes search questions from ground-truth answers and solves them
 * with search. Stages: plan = B answers from D; propose = one proposer search trajectory per answer;
 * gate = rule filter, RAG materials with in-shard noise, replacement draws from the replay pool;
 * solve = RAG verification, then n solver search trajectories on the verified (or replay) problem;
 * judge = EM then LLM judge per answer; filter = rewards, advantages, the next replay pool.
 */
export const sspRecipe: Recipe<SspProposal, SspGated, SspSolved, SspJudged, SspUnit, SspState> = {
  name: 'ssp',
  plan: planSsp,
  propose: proposeSsp,
  gate: (ctx, plan, proposals) => Promise.resolve(gateSsp(ctx, plan, proposals)),
  solve: solveSsp,
  judge: judgeSsp,
  filter: filterSsp,
  solverSearch: sspSolverSearch,
  summarize(stage, records): Record<string, number> {
    switch (stage) {
      case 'propose': {
        const r = records as SspProposal[];
        return {
          answers: r.length,
          questions: r.filter((p) => p.question !== null).length,
          searches: r.reduce((s, p) => s + p.trajectory.searches.length, 0),
        };
      }
      case 'gate': {
        const r = records as SspGated[];
        return {
          ruleValid: r.filter((g) => g.rule.passed).length,
          ruleInvalid: r.filter((g) => !g.rule.passed).length,
        };
      }
      case 'solve': {
        const r = records as SspSolved[];
        return {
          verified: r.filter((s) => s.verification?.passed).length,
          verificationFailed: r.filter((s) => s.verification && !s.verification.passed).length,
          replay: r.filter((s) => s.source === 'replay').length,
          trajectories: r.reduce((s, x) => s + x.trajectories.length, 0),
        };
      }
      case 'judge': {
        const answers = (records as SspJudged[]).flatMap((j) => j.answers);
        return {
          answers: answers.length,
          correct: answers.filter((a) => a.reward > 0).length,
          judged: answers.filter((a) => a.judge).length,
        };
      }
    }
  },
};
