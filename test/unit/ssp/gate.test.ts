import { gateSsp } from '../../../activities/recipes/ssp/gate';
import { EMPTY_STATE, nextState } from '../../../activities/recipes/ssp/pool';
import { SSP_DEFAULTS } from '../../../config/presets/ssp';
import { configFor, recipeTestContext, scriptedCaller } from '../../support/recipe-harness';
import { GOOD_QUESTION, proposal, unit } from './records';

const noLlm = scriptedCaller(() => {
  throw new Error('the gate makes no LLM call');
}).llm;

describe('SSP gate: rule filter, RAG materials, replacements', () => {
  const plan = Array.from({ length: 7 }, (_, i) => unit(i));
  const proposals = [
    proposal(0, GOOD_QUESTION),
    proposal(1, null),
    proposal(2, `${GOOD_QUESTION} Answer2?`),
    proposal(3, GOOD_QUESTION, ['only one']),
    ...[4, 5, 6].map((i) => proposal(i, `${GOOD_QUESTION} ${i}`)),
  ];

  test('rule verdicts per unit, and a verifier prompt for every question that passed', () => {
    const ctx = recipeTestContext(configFor({ recipe: 'ssp', seed: 3 }), noLlm);
    const gated = gateSsp(ctx, plan, proposals);
    expect(gated.map((g) => (g.rule.passed ? 'ok' : g.rule.reason))).toEqual([
      'ok',
      'no_question',
      'answer_in_question',
      'too_few_searches',
      'ok',
      'ok',
      'ok',
    ]);
    for (const g of gated) expect(g.verifierMessages !== undefined).toBe(g.rule.passed);
    expect(gated[0]?.question).toBe(GOOD_QUESTION);
  });

  test('materials: the own information plus 4 noise blocks from OTHER trajectories of the shard', () => {
    const ctx = recipeTestContext(configFor({ recipe: 'ssp', seed: 3 }), noLlm);
    const [first] = gateSsp(ctx, plan, proposals);
    const prompt = first?.verifierMessages?.[0]?.content ?? '';
    expect(prompt).toContain('info for unit 0');
    const noiseUnits = [1, 2, 3, 4, 5, 6].filter((i) => prompt.includes(`info for unit ${i}\n`));
    expect(noiseUnits).toHaveLength(4);
    expect(prompt).toContain(`Question: ${GOOD_QUESTION}`);
    // Seeded: the same draw on a retry, another with another seed (some seed among a few differs).
    expect(gateSsp(ctx, plan, proposals)[0]?.verifierMessages).toEqual(first?.verifierMessages);
    const others = [4, 5, 6, 7, 8].map(
      (seed) =>
        gateSsp(recipeTestContext(configFor({ recipe: 'ssp', seed }), noLlm), plan, proposals)[0]
          ?.verifierMessages?.[0]?.content,
    );
    expect(others.some((o) => o !== prompt)).toBe(true);
  });

  test('verification off: a rule-valid question needs no verifier prompt', () => {
    const ctx = recipeTestContext(configFor({ recipe: 'ssp', ssp: { ragVerification: false } }), noLlm);
    const gated = gateSsp(ctx, plan, proposals);
    expect(gated[0]).toMatchObject({ rule: { passed: true }, question: GOOD_QUESTION });
    expect(gated[0]?.verifierMessages).toBeUndefined();
  });

  test('each unit gets a replacement from the committed pool; none from an empty one', () => {
    const config = configFor({ recipe: 'ssp' });
    const empty = gateSsp(recipeTestContext(config, noLlm, { state: EMPTY_STATE }), plan, proposals);
    for (const g of empty) expect(g.replacement).toBeUndefined();
    const pool = nextState(
      EMPTY_STATE,
      1,
      [{ question: 'pooled question', answer: 'pooled', successRate: 0.2, iteration: 1 }],
      SSP_DEFAULTS.replay,
    );
    const full = gateSsp(recipeTestContext(config, noLlm, { state: pool }), plan, proposals);
    for (const g of full) expect(g.replacement).toEqual({ question: 'pooled question', answer: 'pooled' });
  });
});
