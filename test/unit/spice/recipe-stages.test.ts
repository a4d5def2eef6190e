import type { RunConfig } from '../../../config/schema';
import { SPICE_CALLS } from '../../../activities/clients/llm-protocol';
import type { PlanDocument } from '../../../activities/recipes/types';
import { proposeSpice } from '../../../activities/recipes/spice/propose';
import { gateSpice } from '../../../activities/recipes/spice/gate';
import { judgeSpice } from '../../../activities/recipes/spice/judge';
import { inlineAnswerChecker } from '../../support/answer-checker';
import { filterSpice } from '../../../activities/recipes/spice/filter';
import type {
  SpiceGated,
  SpiceJudged,
  SpiceProposal,
  SpiceSolved,
} from '../../../activities/recipes/spice/records';
import { configFor, recipeTestContext, scriptedCaller } from '../../support/recipe-harness';

const G = 4;
const config = (overrides: Record<string, unknown> = {}): RunConfig =>
  configFor({ recipe: 'spice', groupSize: G, ...overrides });

const VALID_MCQ = JSON.stringify({
  multiple_choice_question: 'Question: What is 17 * 3?\nA) 41\nB) 51\nC) 61\nD) 71\nCorrect: B',
  multiple_choice_correct: 'B',
});
const INVALID = 'I could not think of a question.';

const doc = (docIndex: number): PlanDocument => ({
  unit: docIndex,
  docIndex,
  segmentId: `d${docIndex}#0`,
  docId: `d${docIndex}`,
  text: `Document ${docIndex}: 17 groups of 3.`,
});

describe('SPICE propose', () => {
  test('retries in rounds of G until one attempt is valid, then keeps the valid:invalid ratio', async () => {
    // Round 0: all invalid; round 1: one valid of four.
    const { llm, calls } = scriptedCaller((req, i, round) =>
      req.call === SPICE_CALLS.typeSelection
        ? '{"suitable_for_mcq":true,"suitable_for_free_form":false,"best_answer_type":null,"reason":"relations"}'
        : round === 1 && i === 2
          ? VALID_MCQ
          : INVALID,
    );
    const p = await proposeSpice(recipeTestContext(config(), llm), doc(0));
    expect(p.format).toBe('mcq');
    expect(p.attempts).toBe(2 * G);
    expect(p.validAttempts).toBe(1);
    expect(p.trajectories).toHaveLength(G);
    // 1 valid of 8 attempts: round(4 · 1/8) = 1 (at least one valid is kept).
    expect(p.trajectories.filter((t) => t.completion === VALID_MCQ)).toHaveLength(1);
    expect(calls.filter((c) => c.call === SPICE_CALLS.mcq).map((c) => c.n)).toEqual([G, G]);
    // Seeds differ per round, so a retried round is a new sample, and a retried shard the same one.
    expect(new Set(calls.map((c) => c.seed)).size).toBe(calls.length);
  });

  test('stops at maxAttempts when nothing is valid, and falls back to MCQ when type selection fails', async () => {
    const { llm, calls } = scriptedCaller(() => INVALID);
    const p = await proposeSpice(
      recipeTestContext(config({ spice: { maxAttempts: 10, typeSelectionAttempts: 2 } }), llm),
      doc(3),
    );
    expect(p.typeSelectionFallback).toBe(true);
    expect(p.format).toBe('mcq');
    expect(p.attempts).toBe(10);
    expect(calls.filter((c) => c.call === SPICE_CALLS.mcq).map((c) => c.n)).toEqual([4, 4, 2]);
    expect(calls.filter((c) => c.call === SPICE_CALLS.typeSelection)).toHaveLength(2);
    expect(p.validAttempts).toBe(0);
  });
});

describe('SPICE gate, judge and filter', () => {
  const proposal = (docIndex: number, completions: string[]): SpiceProposal => ({
    unit: docIndex,
    docIndex,
    format: 'mcq',
    typeSelectionFallback: false,
    attempts: completions.length,
    validAttempts: completions.filter((c) => c === VALID_MCQ).length,
    messages: [{ role: 'user', content: 'challenger prompt' }],
    trajectories: completions.map((completion) => ({ completion, finishReason: 'stop' })),
  });

  test('the gate strips the answer line and rejects a question another document already asked', () => {
    const gated = gateSpice([], [proposal(0, [VALID_MCQ, INVALID]), proposal(1, [VALID_MCQ])], {
      refuteArithmetic: false,
      requireAnswerInDocument: false,
    });
    const first = gated[0]!.verdicts[0]!;
    expect(first.valid && first.task.question).not.toMatch(/Correct:/);
    expect(gated[0]!.verdicts[1]).toMatchObject({ valid: false });
    expect(gated[1]!.verdicts[0]).toEqual({ valid: false, reason: 'duplicate' });
  });

  test('rows carry the sampled ids and log-probs; a sample without them falls back to its text', async () => {
    const ids = (text: string) => [...text].map((c) => c.charCodeAt(0));
    const sampled = (text: string) => ({ ids: ids(text), logprobs: ids(text).map(() => -0.5) });
    const p = proposal(0, [VALID_MCQ, INVALID, INVALID, INVALID]);
    p.trajectories = p.trajectories.map((t, i) => (i === 1 ? t : { ...t, sampled: sampled(t.completion) }));
    const gate = gateSpice([], [p], { refuteArithmetic: false, requireAnswerInDocument: false })[0]!;
    const completions = ['\\boxed{B}', '\\boxed{A}', '\\boxed{B}', 'no box'];
    const solve: SpiceSolved = {
      unit: 0,
      docIndex: 0,
      answers: [
        {
          trajectory: 0,
          messages: [{ role: 'user', content: 'q' }],
          completions,
          sampled: completions.map((c, j) => (j === 3 ? null : sampled(c))),
        },
      ],
    };
    const judge = await judgeSpice(gate, solve, inlineAnswerChecker);
    const { rows } = filterSpice({ config: config(), runId: 'u', iteration: 1, state: undefined }, [
      { shard: 0, plan: [doc(0)], propose: [p], gate: [gate], solve: [solve], judge: [judge] },
    ]);
    // The second Challenger trajectory and the fourth answer came from a sample without ids.
    const fallback = [
      rows.filter((r) => r.role === 'challenger')[1],
      rows.find((r) => r.completion === 'no box'),
    ];
    for (const r of rows) {
      if (fallback.includes(r)) {
        expect(r.completionTokens).toBeUndefined();
        expect(r.behaviourLogprobs).toBeUndefined();
      } else {
        expect(r.completionTokens).toEqual([{ ids: ids(r.completion) }]);
        expect(r.behaviourLogprobs).toEqual(ids(r.completion).map(() => -0.5));
      }
    }
    expect(rows.filter((r) => r.completionTokens === undefined)).toHaveLength(2);
  });

  test('rewards and Dr.GRPO advantages follow the spec for one document', async () => {
    const cfg = config();
    // Four Challenger trajectories: two valid tasks (k = 2 and k = 4 of G=4 correct), two invalid.
    const p = proposal(0, [VALID_MCQ, VALID_MCQ, INVALID, INVALID]);
    const gate: SpiceGated = gateSpice([], [p], {
      refuteArithmetic: false,
      requireAnswerInDocument: false,
    })[0]!;
    const boxed = (letter: string) => `so the answer is \\boxed{${letter}}`;
    const solve: SpiceSolved = {
      unit: 0,
      docIndex: 0,
      answers: [
        {
          trajectory: 0,
          messages: [{ role: 'user', content: 'q' }],
          completions: [boxed('B'), boxed('B'), boxed('A'), 'no box'],
        },
        {
          trajectory: 1,
          messages: [{ role: 'user', content: 'q' }],
          completions: [boxed('B'), boxed('B'), boxed('B'), boxed('B')],
        },
      ],
    };
    const judge: SpiceJudged = await judgeSpice(gate, solve, inlineAnswerChecker);
    expect(judge.tasks.map((t) => t.correct)).toEqual([
      [true, true, false, false],
      [true, true, true, true],
    ]);

    const { rows, metrics } = filterSpice({ config: cfg, runId: 'u', iteration: 1, state: undefined }, [
      { shard: 0, plan: [doc(0)], propose: [p], gate: [gate], solve: [solve], judge: [judge] },
    ]);
    const gaussian = (p: number) => Math.exp(-((p * (1 - p) - 0.25) ** 2) / (2 * 0.01));
    const rC = [gaussian(0.5), gaussian(1), -0.1, -0.1];
    const challenger = rows.filter((r) => r.role === 'challenger');
    expect(challenger.map((r) => r.reward)).toEqual(
      rC.map((x) => expect.closeTo(x, 12) as unknown as number),
    );
    const meanC = rC.reduce((a, b) => a + b) / 4;
    challenger.forEach((r, i) => expect(r.advantage).toBeCloseTo(rC[i]! - meanC, 12));

    // One valid task is picked for the Reasoner: its G answers, rewarded 1[correct], centred.
    const reasoner = rows.filter((r) => r.role === 'reasoner');
    expect(reasoner).toHaveLength(G);
    const rewards = reasoner.map((r) => r.reward);
    expect([[1, 1, 0, 0].join(), [1, 1, 1, 1].join()]).toContain(rewards.join());
    const meanR = rewards.reduce((a, b) => a + b) / G;
    reasoner.forEach((r) => expect(r.advantage).toBeCloseTo(r.reward - meanR, 12));

    expect(metrics.validTaskRate).toBe(0.5);
    expect(metrics.passRateHistogram).toEqual([0, 0, 1, 0, 1]);
    expect(Object.values(metrics.invalidReasons).reduce((a, b) => a + b)).toBe(2);
    expect(metrics.rowsByRole).toEqual({ challenger: 4, reasoner: 4 });
  });
});
