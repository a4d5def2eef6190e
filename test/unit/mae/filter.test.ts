import type { RunConfig } from '../../../config/schema';
import { filterMae, filterMaeUnits, type MaeUnitRecords } from '../../../activities/recipes/mae/filter';
import { alignUnits } from '../../../activities/recipes/align';
import { judgeScore, type JudgeScore } from '../../../activities/judges/score';
import type { MaeState } from '../../../activities/recipes/mae/records';
import { configFor } from '../../support/recipe-harness';

const config = (mae: Record<string, unknown> = {}): RunConfig =>
  configFor({ recipe: 'mae', batchSize: 4, mae });

const pools: MaeState = {
  v: 1,
  seedCount: 2,
  questions: ['s1', 's2'],
  pairs: [{ question: 's1', answer: 'old' }],
};
const gen = (completion: string) => ({
  messages: [{ role: 'user' as const, content: 'prompt' }],
  completion,
  finishReason: 'stop',
});
const score = (x: number | 'bad'): JudgeScore =>
  judgeScore(x === 'bad' ? 'no tag' : `<score>${x}</score>`, '(x-1)/9');

interface UnitSpec {
  proposer: string;
  quality?: number | 'bad';
  solve?: Array<number | 'bad'>;
  solver: string;
  solverX: number | 'bad';
  judge?: string;
  reference?: string;
}

/** One unit's records as the stages would have written them (through the real gate rule). */
function unitRecords(docIndex: number, s: UnitSpec, threshold = 0.7): MaeUnitRecords {
  const question = s.quality === undefined ? undefined : `proposed ${docIndex}`;
  const quality = s.quality === undefined ? undefined : score(s.quality);
  const accepted = quality !== undefined && quality.value >= threshold;
  const base = { unit: docIndex, docIndex };
  return {
    plan: { ...base, solverQuestion: `pool ${docIndex}`, ...(s.reference ? { reference: s.reference } : {}) },
    propose: {
      ...base,
      proposer: gen(s.proposer),
      ...(question ? { question, quality } : { invalid: 'no_question' as const }),
    },
    gate: {
      ...base,
      ...(question ? { question } : {}),
      accepted,
      ...(accepted ? {} : { rejected: question ? ('below_threshold' as const) : ('no_question' as const) }),
      solverQuestion: `pool ${docIndex}`,
    },
    solve: {
      ...base,
      ...(s.solve && question
        ? { difficulty: { question, messages: [], completions: s.solve.map(String) } }
        : {}),
      solver: gen(s.solver),
    },
    judge: {
      ...base,
      ...(s.solve ? { difficultyScores: s.solve.map(score) } : {}),
      solverScore: score(s.solverX),
      ...(s.judge !== undefined
        ? { judge: { ...gen(s.judge), pair: { question: 's1', answer: 'old' } } }
        : {}),
    },
  };
}

const UNITS: UnitSpec[] = [
  // Accepted (X = 10), nobody solves it, one tag: r_P = (1 + 1 + 1)/3.
  {
    proposer: '<question>Q0</question>',
    quality: 10,
    solve: [1, 1, 1, 1, 1],
    solver: '<answer>a</answer>',
    solverX: 10,
    judge: '<think>.</think><score>7</score>',
    reference: 's1',
  },
  // Rejected (X = 7 → 2/3), two tags, half the answers are fallbacks: r_P = (2/3 + 1 − mean)/3 + 0.5/3.
  {
    proposer: '<question>d</question><question>Q1</question>',
    quality: 7,
    solve: [10, 'bad', 1, 'bad', 10],
    solver: 'no tag',
    solverX: 'bad',
    judge: 'no score',
  },
  // No question: r_P = 0; a solver answer with two tags.
  {
    proposer: 'prose only',
    solver: '<answer>1</answer><answer>2</answer>',
    solverX: 4,
    judge: '<score>1</score><score>2</score>',
  },
  // Accepted, quality fallback is impossible here (a fallback is 0.5 < 0.7); solved by everyone.
  {
    proposer: '<question>Q3</question>',
    quality: 8,
    solve: [10, 10, 10, 10, 10],
    solver: '<answer>b</answer>',
    solverX: 1,
  },
];

describe('MAE filter: rewards, per-role advantages, next pools, metrics', () => {
  const units = UNITS.map((s, i) => unitRecords(i, s));
  const out = filterMaeUnits(config(), pools, units);
  const ofRole = (role: string) => out.rows.filter((r) => r.role === role);

  test('role rewards follow §2.3 unit by unit', () => {
    const v = (x: number) => (x - 1) / 9;
    const mean1 = (v(10) + 0.5 + v(1) + 0.5 + v(10)) / 5;
    expect(ofRole('proposer').map((r) => r.reward)).toEqual([
      expect.closeTo(1, 12),
      expect.closeTo((v(7) + (1 - mean1) + 0.5) / 3, 12),
      0,
      expect.closeTo((v(8) + 0 + 1) / 3, 12),
    ]);
    expect(ofRole('solver').map((r) => r.reward)).toEqual([
      expect.closeTo(1, 12),
      expect.closeTo(0.25, 12),
      expect.closeTo(0.5 * v(4) + 0.25, 12),
      expect.closeTo(0.5, 12),
    ]);
    expect(ofRole('judge').map((r) => r.reward)).toEqual([1, 0, 0.5]);
  });

  test('advantages are whitened per role over the batch (μ, σ of that role, + ε)', () => {
    for (const role of ['proposer', 'solver', 'judge']) {
      const rows = ofRole(role);
      const rewards = rows.map((r) => r.reward);
      const mu = rewards.reduce((a, b) => a + b, 0) / rewards.length;
      const sigma = Math.sqrt(rewards.reduce((a, r) => a + (r - mu) ** 2, 0) / rewards.length);
      rows.forEach((r) => expect(r.advantage).toBeCloseTo((r.reward - mu) / (sigma + 1e-6), 9));
      expect(rows.every((r) => r.group === role)).toBe(true);
    }
  });

  test('D gains the accepted questions, P every trained pair (what the Judge was shown)', () => {
    expect(out.state?.questions).toEqual(['s1', 's2', 'proposed 0', 'proposed 3']);
    expect(out.state?.pairs).toEqual([
      { question: 's1', answer: 'old' },
      { question: 'pool 0', answer: 'a' },
      { question: 'pool 1', answer: 'no tag' },
      { question: 'pool 2', answer: '2' },
      { question: 'pool 3', answer: 'b' },
    ]);
    expect(out.state?.seedCount).toBe(2);
  });

  test('metrics count pool growth, rejections and every neutral fallback', () => {
    expect(out.metrics).toMatchObject({
      documents: 4,
      validTaskRate: 0.5,
      invalidReasons: { below_threshold: 1, no_question: 1 },
      rowsByRole: { proposer: 4, solver: 4, judge: 3 },
    });
    expect(out.metrics.extra).toMatchObject({
      'pool.questions': 4,
      'pool.added': 2,
      'pool.rejected': 1,
      'pool.pairs': 5,
      'pool.pairsAdded': 4,
      'proposer.withReference': 1,
      'proposer.questions': 3,
      'judge.unitsWithoutPair': 1,
      'fallback.quality': 0,
      'fallback.difficulty': 2,
      'fallback.solver': 1,
      'fallback.rate': 3 / (3 + 15 + 4),
      'format.proposer': (1 + 0.5 + 0 + 1) / 4,
      'format.solver': (1 + 0 + 0.5 + 1) / 4,
      'format.judge': 0.5,
      'judgeScore.10': 9,
      'judgeScore.1': 7,
    });
  });

  test('an all-equal role batch gets zero advantages, not NaN', () => {
    const same = filterMaeUnits(
      config(),
      pools,
      [0, 1, 2].map((i) =>
        unitRecords(i, {
          proposer: 'x',
          solver: '<answer>a</answer>',
          solverX: 'bad',
          judge: '<score>5</score>',
        }),
      ),
    );
    expect(same.rows).toHaveLength(9);
    expect(same.rows.every((r) => r.advantage === 0)).toBe(true);
    expect(same.metrics.zeroAdvantageFraction).toBe(1);
    expect(same.metrics.extra['fallback.rate']).toBe(1);
  });

  test('a frozen role plays but adds no rows; the pools grow the same', () => {
    const frozen = filterMaeUnits(config({ trainRoles: { solver: false } }), pools, units);
    expect(frozen.metrics.rowsByRole).toEqual({ proposer: 4, judge: 3 });
    expect(frozen.state).toEqual(out.state);
  });

  test('zeroed difficulty for rejected questions and binary difficulty change the proposer rewards only', () => {
    const zeroedUnits = UNITS.map((s, i) => unitRecords(i, i === 1 ? { ...s, solve: undefined } : s));
    const zeroed = filterMaeUnits(config({ zeroDifficultyWhenRejected: true }), pools, zeroedUnits);
    expect(zeroed.rows.filter((r) => r.role === 'proposer')[1]?.reward).toBeCloseTo((6 / 9 + 0.5) / 3, 12);
    const binary = filterMaeUnits(config({ difficulty: 'binary' }), pools, units);
    // Unit 1: R̄_S = 0.6 < 0.7, so the binary difficulty is 1 (linear: 0.4).
    expect(binary.rows.filter((r) => r.role === 'proposer')[1]?.reward).toBeCloseTo(
      (6 / 9 + 1 + 0.5) / 3,
      12,
    );
  });

  test('the async filter starts from the committed pools and checks stage alignment', async () => {
    const shard = {
      shard: 0,
      plan: units.map((u) => u.plan),
      propose: units.map((u) => u.propose),
      gate: units.map((u) => u.gate),
      solve: units.map((u) => u.solve),
      judge: units.map((u) => u.judge),
    };
    const ctx = { config: config(), runId: 'r', iteration: 2, state: pools };
    expect(await filterMae(ctx, [shard])).toEqual(out);
    expect(() => alignUnits([{ ...shard, judge: [...shard.judge].reverse() }])).toThrow(/misaligned/);
    expect(() => alignUnits([{ ...shard, solve: shard.solve.slice(0, -1) }])).toThrow(/missing/);
  });
});
