import type { RunConfig } from '../../../config/schema';
import type { LlmCaller } from '../../../activities/clients/inference';
import { MAE_CALLS } from '../../../activities/clients/llm-protocol';
import { planMae } from '../../../activities/recipes/mae/plan';
import { proposeMae } from '../../../activities/recipes/mae/propose';
import { gateMae } from '../../../activities/recipes/mae/gate';
import { solveMae } from '../../../activities/recipes/mae/solve';
import { judgeMae } from '../../../activities/recipes/mae/judge';
import { ZERO_SETTING_SEEDS } from '../../../activities/recipes/mae/zero-seeds';
import type { MaeGated, MaePlanUnit, MaeProposal, MaeState } from '../../../activities/recipes/mae/records';
import { configFor, recipeTestContext, scriptedCaller } from '../../support/recipe-harness';

const config = (overrides: Record<string, unknown> = {}): RunConfig =>
  configFor({ recipe: 'mae', batchSize: 8, groupSize: 5, ...overrides });

/** A stage context at iteration 3; `llm` may be per role, to see which endpoints a stage asks for. */
const context = (cfg: RunConfig, llm: LlmCaller | ((role: string) => LlmCaller)) =>
  recipeTestContext(cfg, llm, { iteration: 3 });

const planContext = (cfg: RunConfig, state: MaeState | undefined, iteration = 1) => ({
  config: cfg,
  runId: 'unit',
  iteration,
  corpus: () => Promise.reject(new Error('MAE reads no corpus')),
  segments: () => Promise.reject(new Error('MAE reads no corpus')),
  state,
});

const state: MaeState = {
  v: 1,
  seedCount: 2,
  questions: ['seed A', 'seed B', 'added C'],
  pairs: [
    { question: 'seed A', answer: 'a1' },
    { question: 'added C', answer: 'c1' },
  ],
};

describe('MAE plan', () => {
  test('first iteration (zero setting): questions from the built-in seeds, no Judge pair while P is empty', async () => {
    const units = await planMae(planContext(config({ batchSize: 32 }), undefined));
    expect(units).toHaveLength(32);
    for (const u of units) {
      expect(ZERO_SETTING_SEEDS).toContain(u.solverQuestion);
      if (u.reference !== undefined) expect(ZERO_SETTING_SEEDS).toContain(u.reference);
      expect(u.judgePair).toBeUndefined();
    }
    // p_ref = 0.5 by default: some prompts carry a reference, some do not.
    const withReference = units.filter((u) => u.reference !== undefined).length;
    expect(withReference).toBeGreaterThan(4);
    expect(withReference).toBeLessThan(28);
  });

  test.each([
    [0, 0],
    [1, 16],
  ])('referenceRatio %d: %d of 16 prompts carry a reference', async (ratio, expected) => {
    const units = await planMae(
      planContext(config({ batchSize: 16, mae: { referenceRatio: ratio } }), state),
    );
    expect(units.filter((u) => u.reference !== undefined)).toHaveLength(expected);
  });

  test('later iterations draw from the committed pools only, the same way on a retry', async () => {
    const cfg = config({ batchSize: 64 });
    const units = await planMae(planContext(cfg, state, 4));
    for (const u of units) {
      expect(state.questions).toContain(u.solverQuestion);
      expect(state.pairs).toContainEqual(u.judgePair);
    }
    // Uniform over the whole pool: seeds and added questions alike.
    expect(new Set(units.map((u) => u.solverQuestion))).toEqual(new Set(state.questions));
    expect(await planMae(planContext(cfg, state, 4))).toEqual(units);
    expect(await planMae(planContext(cfg, state, 5))).not.toEqual(units);
  });

  test('a frozen Judge gets no pairs; a separate judge model must be frozen', async () => {
    const frozen = await planMae(planContext(config({ mae: { trainRoles: { judge: false } } }), state));
    expect(frozen.every((u) => u.judgePair === undefined)).toBe(true);
    const separate = config({ inference: { roles: { judge: { model: 'frozen-judge' } } } });
    await expect(planMae(planContext(separate, state))).rejects.toMatchObject({
      type: 'InvalidConfig',
      message: expect.stringContaining('mae.trainRoles.judge') as unknown,
    });
    const allowed = config({
      inference: { roles: { judge: { model: 'frozen-judge' } } },
      mae: { trainRoles: { judge: false } },
    });
    await expect(planMae(planContext(allowed, state))).resolves.toHaveLength(8);
  });
});

const unit = (docIndex: number, extra: Partial<MaePlanUnit> = {}): MaePlanUnit => ({
  unit: docIndex,
  docIndex,
  solverQuestion: `solver question ${docIndex}`,
  ...extra,
});

describe('MAE propose', () => {
  test('L3 with the reference, the last question extracted, scored by the judge endpoint with L5', async () => {
    const roles: string[] = [];
    const { llm, calls } = scriptedCaller((req) =>
      req.call === MAE_CALLS.proposer
        ? '<question>draft</question>\n<question>What is 6*7?</question>'
        : '<score>9</score>',
    );
    const endpoint = (role: string) => {
      roles.push(role);
      return llm;
    };
    const p = await proposeMae(context(config(), endpoint), unit(2, { reference: 'What is 5*5?' }));
    expect(p).toMatchObject({ unit: 2, question: 'What is 6*7?', quality: { x: 9, value: 8 / 9 } });
    expect(p.proposer.messages[0]?.content).toContain('### Reference Questions:\nWhat is 5*5?\n');
    expect(p.proposer.messages[0]?.content).toContain('Modified Version of a Reference Task');
    expect(calls.map((c) => [c.call, c.role, c.n])).toEqual([
      [MAE_CALLS.proposer, 'proposer', 1],
      [MAE_CALLS.judgeQuestion, 'judge', 1],
    ]);
    expect(calls[1]?.messages[0]?.content).toContain('Question: What is 6*7?\nFirst, analyze the question');
    expect(roles).toEqual(['proposer', 'judge']);
    // Sampled with the run's settings (T = 1.0, top-p 1.0), seeded per unit.
    expect(calls.every((c) => c.temperature === 1 && c.topP === 1)).toBe(true);
    expect(new Set(calls.map((c) => c.seed)).size).toBe(2);
  });

  test('no question: no quality call, and the reason is kept', async () => {
    const { llm, calls } = scriptedCaller(() => '<question>\n[Your generated question here]\n</question>');
    const p = await proposeMae(context(config(), llm), unit(0));
    expect(p).toMatchObject({ invalid: 'placeholder' });
    expect(p.question).toBeUndefined();
    expect(p.proposer.messages[0]?.content).toContain('Create a Challenging and Original Task');
    expect(calls).toHaveLength(1);
  });
});

describe('MAE gate: R_quality ≥ 0.7 enters D', () => {
  const proposal = (
    docIndex: number,
    x: number | undefined,
    mapping: '(x-1)/9' | 'x/10' = '(x-1)/9',
  ): MaeProposal => ({
    unit: docIndex,
    docIndex,
    proposer: { messages: [], completion: '', finishReason: 'stop' },
    ...(x === undefined
      ? { invalid: 'no_question' as const }
      : {
          question: `q${docIndex}`,
          quality: { completion: '', x, value: mapping === '(x-1)/9' ? (x - 1) / 9 : x / 10 },
        }),
  });

  test.each([
    ['(x-1)/9', 7, false],
    ['(x-1)/9', 8, true],
    ['x/10', 6, false],
    ['x/10', 7, true],
  ] as const)('mapping %s, X = %d: accepted %s', (mapping, x, accepted) => {
    const cfg = config({ mae: { scoreMapping: mapping } });
    const [g] = gateMae(cfg.mae, [unit(0)], [proposal(0, x, mapping)]);
    expect(g).toMatchObject({ accepted, question: 'q0' });
    expect(g?.rejected).toBe(accepted ? undefined : 'below_threshold');
  });

  test('a neutral fallback (0.5) is below the gate; the filter ablation admits every question', () => {
    const fallback: MaeProposal = {
      ...proposal(0, 5),
      quality: { completion: '', value: 0.5, fallback: 'no_score_tag' },
    };
    expect(gateMae(config().mae, [unit(0)], [fallback])[0]?.accepted).toBe(false);
    expect(
      gateMae(config({ mae: { qualityFilter: false } }).mae, [unit(0)], [proposal(0, 1)])[0]?.accepted,
    ).toBe(true);
  });

  test('an excluded question (mae.excludeQuestions) stays out of D whatever its quality, and says why', () => {
    const excluded = new Set(['q0']);
    const [out, kept] = gateMae(
      config().mae,
      [unit(0), unit(1)],
      [proposal(0, 10), proposal(1, 10)],
      excluded,
    );
    expect(out).toMatchObject({ question: 'q0', accepted: false, rejected: 'excluded' });
    expect(kept).toMatchObject({ question: 'q1', accepted: true });
    expect(kept?.rejected).toBeUndefined();
    const noFilter = config({ mae: { qualityFilter: false } }).mae;
    expect(gateMae(noFilter, [unit(0)], [proposal(0, 10)], excluded)[0]?.accepted).toBe(false);
  });

  test('carries the Solver question and the Judge pair; no question is rejected with its reason', () => {
    const pair = { question: 'pq', answer: 'pa' };
    const [g] = gateMae(config().mae, [unit(4, { judgePair: pair })], [proposal(4, undefined)]);
    expect(g).toEqual({
      unit: 4,
      docIndex: 4,
      solverQuestion: 'solver question 4',
      judgePair: pair,
      accepted: false,
      rejected: 'no_question',
    });
  });
});

describe('MAE solve and judge', () => {
  const gated = (extra: Partial<MaeGated> = {}): MaeGated => ({
    unit: 1,
    docIndex: 1,
    question: 'proposed q',
    accepted: true,
    solverQuestion: 'pool q',
    ...extra,
  });

  test('N_sample difficulty answers and one trained answer, each judged with L4 from the shown answer', async () => {
    const { llm, calls } = scriptedCaller((req, i) =>
      req.call === MAE_CALLS.solver
        ? `work ${i}\n<answer>ans ${i}</answer>`
        : `<think>t</think><score>${3 + (calls.length % 5)}</score>`,
    );
    const cfg = config({ groupSize: 5 });
    const g = gated({ judgePair: { question: 'pair q', answer: 'pair a' } });
    const solved = await solveMae(context(cfg, llm), g);
    expect(solved.difficulty?.completions).toHaveLength(5);
    expect(solved.difficulty?.question).toBe('proposed q');
    expect(solved.solver.messages[0]?.content).toMatch(/### Task:\npool q$/);
    expect(calls.map((c) => c.n).sort()).toEqual([1, 5]);

    const judged = await judgeMae(context(cfg, llm), g, solved);
    expect(judged.difficultyScores).toHaveLength(5);
    expect(judged.solverScore.x).toBeDefined();
    expect(judged.judge?.pair).toEqual({ question: 'pair q', answer: 'pair a' });
    const judgeCalls = calls.filter((c) => c.call === MAE_CALLS.judgeAnswer);
    expect(judgeCalls).toHaveLength(7);
    // The Judge sees the content of the <answer> tag, not the working before it.
    expect(judgeCalls.some((c) => c.messages[0]?.content.includes('Generated Solution: ans 3\n'))).toBe(true);
    expect(judgeCalls.some((c) => c.messages[0]?.content.includes('Generated Solution: pair a\n'))).toBe(
      true,
    );
    expect(new Set(calls.map((c) => c.seed)).size).toBe(calls.length);
  });

  test('no question, or a rejected one with zeroed difficulty: only the trained answer; no pair: no evaluation', async () => {
    const { llm, calls } = scriptedCaller(() => '<answer>x</answer>');
    const noQuestion = await solveMae(
      context(config(), llm),
      gated({ question: undefined, accepted: false }),
    );
    expect(noQuestion.difficulty).toBeUndefined();
    const zeroed = config({ mae: { zeroDifficultyWhenRejected: true } });
    const rejected = gated({ accepted: false, rejected: 'below_threshold' });
    expect((await solveMae(context(zeroed, llm), rejected)).difficulty).toBeUndefined();
    expect((await solveMae(context(config(), llm), rejected)).difficulty?.completions).toHaveLength(5);
    calls.length = 0;
    const judged = await judgeMae(context(config(), llm), gated({ question: undefined }), noQuestion);
    expect(judged.difficultyScores).toBeUndefined();
    expect(judged.judge).toBeUndefined();
    expect(judged.solverScore).toMatchObject({ value: 0.5, fallback: 'no_score_tag' });
    expect(calls).toHaveLength(1);
  });

  test('judge without a solve record is a bug', async () => {
    const { llm } = scriptedCaller(() => '');
    await expect(judgeMae(context(config(), llm), gated(), undefined)).rejects.toThrow(/no record/);
  });
});
