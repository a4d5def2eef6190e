import type { PlanDocument, Recipe } from '../types';
import { planSpice } from './plan';
import { proposeSpice } from './propose';
import { gateSpice } from './gate';
import { solveSpice } from './solve';
import { judgeSpice } from './judge';
import { sharedAnswerChecker } from '../../scoring/answer-checker-pool';
import { filterSpice } from './filter';
import type { SpiceGated, SpiceJudged, SpiceProposal, SpiceSolved } from './records';

/** SPICE (docs/recipes/spice.md): a Challenger grounded in documents, a Reasoner without them. */
export const spiceRecipe: Recipe<
  SpiceProposal,
  SpiceGated,
  SpiceSolved,
  SpiceJudged,
  PlanDocument,
  undefined
> = {
  name: 'spice',
  plan: planSpice,
  propose: proposeSpice,
  gate: (ctx, plan, proposals) =>
    Promise.resolve(
      gateSpice(plan, proposals, {
        refuteArithmetic: ctx.config.spice.refuteArithmeticAnswers,
        requireAnswerInDocument: ctx.config.spice.requireAnswerInDocument,
      }),
    ),
  solve: solveSpice,
  judge: (_ctx, gated, solved) => judgeSpice(gated, solved, sharedAnswerChecker()),
  filter: filterSpice,
  summarize(stage, records): Record<string, number> {
    switch (stage) {
      case 'propose': {
        const r = records as SpiceProposal[];
        return {
          documents: r.length,
          attempts: r.reduce((s, p) => s + p.attempts, 0),
          validAttempts: r.reduce((s, p) => s + p.validAttempts, 0),
        };
      }
      case 'gate': {
        const verdicts = (records as SpiceGated[]).flatMap((g) => g.verdicts);
        return {
          valid: verdicts.filter((v) => v.valid).length,
          invalid: verdicts.filter((v) => !v.valid).length,
        };
      }
      case 'solve':
        return {
          completions: (records as SpiceSolved[]).reduce(
            (s, r) => s + r.answers.reduce((t, a) => t + a.completions.length, 0),
            0,
          ),
        };
      case 'judge': {
        const correct = (records as SpiceJudged[]).flatMap((j) => j.tasks.flatMap((t) => t.correct));
        return { answers: correct.length, correct: correct.filter(Boolean).length };
      }
    }
  },
};
