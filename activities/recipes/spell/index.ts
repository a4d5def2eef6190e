import type { Recipe } from '../types';
import { planSpell } from './plan';
import { proposeSpell } from './propose';
import { gateSpell } from './gate';
import { solveSpell } from './solve';
import { judgeSpell } from './judge';
import { filterSpell } from './filter';
import { hasSpread, scoreResponses } from './rewards';
import type { SpellGated, SpellJudged, SpellProposal, SpellSolved, SpellState, SpellUnit } from './records';

/**
 * SPELL (docs/recipes/spell.md): one policy questions, responds and verifies over document clusters.
 * Stages: plan = (cluster, task) items with the questioner's context from the committed history;
 * propose = questioner + the no-document grounding probe; gate = the probe's verdicts and the responder
 * prompt; solve = G responses; judge = rule check + G verifier votes per response (LLM: rollout pool);
 * filter = rewards, role-specific sampling, advantages and the next history. The accumulator (§1.10) plans
 * further rounds while the judged rounds hold fewer than N responder groups with std > 0.
 */
export const spellRecipe: Recipe<SpellProposal, SpellGated, SpellSolved, SpellJudged, SpellUnit, SpellState> =
  {
    name: 'spell',
    plan: planSpell,
    propose: proposeSpell,
    gate: (ctx, plan, proposals) =>
      Promise.resolve(gateSpell(plan, proposals, ctx.config.spell.maxPromptTokens)),
    solve: solveSpell,
    judge: judgeSpell,
    filter: filterSpell,
    accumulation: ({ spell }) =>
      spell.maxRounds > 1
        ? { metric: 'solvableGroups', target: spell.responderGroups, maxRounds: spell.maxRounds }
        : undefined,
    summarize(stage, records): Record<string, number> {
      switch (stage) {
        case 'propose': {
          const r = records as SpellProposal[];
          return {
            items: r.length,
            questions: r.filter((p) => p.outcome.kind === 'question').length,
            badFormat: r.filter((p) => p.outcome.kind === 'bad_format').length,
            ungrounded: r.filter((p) => p.grounding?.passed).length,
          };
        }
        case 'gate': {
          const r = records as SpellGated[];
          return Object.fromEntries(
            (['valid', 'bad_format', 'bad_ground', 'discarded'] as const).map((s) => [
              s,
              r.filter((g) => g.status === s).length,
            ]),
          );
        }
        case 'solve':
          return { responses: (records as SpellSolved[]).reduce((s, r) => s + r.completions.length, 0) };
        case 'judge': {
          const judged = records as SpellJudged[];
          const responses = judged.flatMap((j) => j.responses);
          const votes = responses.flatMap((r) => r.verifier?.votes ?? []);
          return {
            responses: responses.length,
            ruleCorrect: responses.filter((r) => r.rule).length,
            judgments: votes.length,
            invalidJudgments: votes.filter((v) => v === -1).length,
            // What the accumulator counts: the filter's responder groups with std(r_res) > 0.
            solvableGroups: judged.filter((j) => hasSpread(scoreResponses(j.responses).map((r) => r.reward)))
              .length,
          };
        }
      }
    },
  };
