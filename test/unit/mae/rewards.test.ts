import {
  difficultyReward,
  judgeReward,
  meanSolveScore,
  proposerReward,
  solverReward,
} from '../../../activities/recipes/mae/rewards';
import { configFor } from '../../support/recipe-harness';

const params = (mae: Record<string, unknown> = {}) => configFor({ recipe: 'mae', mae }).mae;

describe('difficulty (§2.3): 1 − R̄_S, or the binary 𝟙[R̄_S < 0.7]', () => {
  test.each([
    [[0, 0, 0, 0, 0], 1, 1],
    [[1, 1, 1, 1, 1], 0, 0],
    [[0.5, 0.5, 0.5, 0.5, 0.5], 0.5, 1],
    [[1, 1, 1, 0.5, 0], 0.3, 0],
    [[1, 1, 1, 0.4, 0], 0.32, 1],
    [[7 / 9, 7 / 9, 7 / 9, 7 / 9, 7 / 9], 2 / 9, 0],
    [[0.7, 0.7], 0.3, 0],
    [[0.69, 0.69], 0.31, 1],
  ])('scores %j: linear %d, binary %d', (scores, linear, binary) => {
    expect(difficultyReward('linear', scores)).toBeCloseTo(linear, 12);
    expect(difficultyReward('binary', scores)).toBe(binary);
  });

  test('R̄_S needs answers', () => {
    expect(meanSolveScore([0.2, 0.4])).toBeCloseTo(0.3, 12);
    expect(() => meanSolveScore([])).toThrow(RangeError);
  });
});

describe('proposer reward: ⅓ quality + ⅓ (1 − R̄_S) + ⅓ format', () => {
  const solved = (quality: number, solveScores: number[], format: number, accepted = quality >= 0.7) =>
    ({ question: true, quality, solveScores, format, accepted }) as const;
  test.each([
    ['perfect question nobody solves', solved(1, [0, 0, 0, 0, 0], 1), 1],
    ['perfect question everyone solves', solved(1, [1, 1, 1, 1, 1], 1), 2 / 3],
    [
      'rejected question, half solved, two tags',
      solved(2 / 9, [0.5, 0.5, 0.5, 0.5, 0.5], 0.5),
      (2 / 9 + 0.5 + 0.5) / 3,
    ],
    ['neutral fallbacks everywhere', solved(0.5, [0.5, 0.5, 0.5, 0.5, 0.5], 1), 2 / 3],
    ['no question extracted: 0 whatever the format', { question: false, format: 1 } as const, 0],
  ])('%s', (_name, outcome, expected) => {
    expect(proposerReward(params(), outcome)).toBeCloseTo(expected, 12);
  });

  test('[R] variants: binary difficulty, and a zeroed difficulty for gated-out questions', () => {
    const outcome = solved(0.5, [0.2, 0.2, 0.2, 0.2, 0.2], 1, false);
    expect(proposerReward(params({ difficulty: 'binary' }), outcome)).toBeCloseTo((0.5 + 1 + 1) / 3, 12);
    const zeroed = params({ zeroDifficultyWhenRejected: true });
    expect(proposerReward(zeroed, outcome)).toBeCloseTo((0.5 + 0 + 1) / 3, 12);
    // A zeroed question needs no solve scores; an accepted one keeps its difficulty term.
    expect(proposerReward(zeroed, { question: true, quality: 0.5, format: 1, accepted: false })).toBeCloseTo(
      0.5,
      12,
    );
    expect(proposerReward(zeroed, { ...outcome, accepted: true })).toBeCloseTo((0.5 + 0.8 + 1) / 3, 12);
    expect(() =>
      proposerReward(params(), { question: true, quality: 0.5, format: 1, accepted: false }),
    ).toThrow(/solve scores/);
  });

  test('the format-reward ablation drops the term; weights are configurable', () => {
    const outcome = solved(0.9, [0.4, 0.4, 0.4, 0.4, 0.4], 1);
    expect(proposerReward(params({ formatReward: false }), outcome)).toBeCloseTo((0.9 + 0.6) / 3, 12);
    const weighted = params({ proposerWeights: { quality: 0.5, difficulty: 0.5, format: 0 } });
    expect(proposerReward(weighted, outcome)).toBeCloseTo(0.75, 12);
  });
});

describe('solver reward: ½ V_J + ½ format; judge reward: format only', () => {
  test.each([
    [1, 1, 1],
    [7 / 9, 1, (7 / 9 + 1) / 2],
    [0.5, 0, 0.25],
    [0, 0.5, 0.25],
    [0, 0, 0],
  ])('V_J %d, format %d → %d', (judge, format, expected) => {
    expect(solverReward(params(), judge, format)).toBeCloseTo(expected, 12);
  });

  test.each([
    [1, 1],
    [0.5, 0.5],
    [0, 0],
  ])('judge format %d → %d', (format, expected) => {
    expect(judgeReward(params(), format)).toBe(expected);
  });

  test('without the format reward the Judge has no signal and the Solver keeps ½ V_J', () => {
    expect(judgeReward(params({ formatReward: false }), 1)).toBe(0);
    expect(solverReward(params({ formatReward: false }), 0.8, 1)).toBeCloseTo(0.4, 12);
  });
});
