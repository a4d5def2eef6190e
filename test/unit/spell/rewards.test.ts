import {
  agreement,
  majorityVote,
  questionerReward,
  responderReward,
  verifierRewards,
} from '../../../activities/recipes/spell/rewards';
import { zScores } from '../../../activities/scoring/advantages';
import type { Vote } from '../../../activities/recipes/spell/records';

const SIGMA = 0.5 / 3;

describe('questioner reward (Eq. 7)', () => {
  test.each([
    [1, 0.08],
    [2, 0.325],
    [3, 0.755],
    [4, 1.0],
    [5, 0.755],
    [6, 0.325],
    [7, 0.08],
  ])('gaussian, %i of 8 solved → %f', (k, expected) => {
    expect(questionerReward('gaussian', k / 8, SIGMA)).toBeCloseTo(expected, 3);
  });

  test.each([0, 1])('r̄ = %i gives 0 under every mapping', (r) => {
    for (const kind of ['gaussian', 'absolute_zero', 'r_zero'] as const)
      expect(questionerReward(kind, r, SIGMA)).toBe(0);
  });

  test.each([
    [0.125, 0.875, 0.25],
    [0.5, 0.5, 1],
    [0.75, 0.25, 0.5],
  ])('ablations at r̄ = %f: AZR 1 − r̄ = %f, R-Zero 1 − 2|r̄ − 0.5| = %f', (r, azr, rzero) => {
    expect(questionerReward('absolute_zero', r, SIGMA)).toBeCloseTo(azr, 12);
    expect(questionerReward('r_zero', r, SIGMA)).toBeCloseTo(rzero, 12);
  });

  test('σ ablations change the width: 0.5/6 is narrower, 0.5/2 wider', () => {
    expect(questionerReward('gaussian', 3 / 8, 0.5 / 6)).toBeCloseTo(
      Math.exp(-0.015625 / (2 * (0.5 / 6) ** 2)),
      12,
    );
    expect(questionerReward('gaussian', 3 / 8, 0.5 / 6)).toBeLessThan(
      questionerReward('gaussian', 3 / 8, SIGMA),
    );
    expect(questionerReward('gaussian', 3 / 8, 0.5 / 2)).toBeGreaterThan(
      questionerReward('gaussian', 3 / 8, SIGMA),
    );
  });
});

describe('verifier votes (Eq. 4, 5)', () => {
  test.each<[Vote[], 0 | 1]>([
    [[1, 1, 1, 1, 1, 0, 0, 0], 1],
    [[1, 1, 1, 1, 0, 0, 0, 0], 0], // a tie is not a majority of yes
    [[1, 1, 1, 1, -1, -1, -1, -1], 0], // invalid judgments are not yes
    [[1, 1, 1, 1, 1, -1, -1, -1], 1],
    [[0, 0, 0, 0, 0, 0, 0, 0], 0],
  ])('majority of %j is %i', (votes, majority) => {
    expect(majorityVote(votes)).toBe(majority);
  });

  test('rewards agreement with the majority, −1 for an invalid judgment', () => {
    const votes: Vote[] = [1, 1, 0, -1, 1, 1, 0, 1];
    expect(majorityVote(votes)).toBe(1);
    expect(verifierRewards(votes, 1)).toEqual([1, 1, 0, -1, 1, 1, 0, 1]);
    expect(verifierRewards(votes, 0)).toEqual([0, 0, 1, -1, 0, 0, 1, 0]);
    expect(agreement(votes, 1)).toBeCloseTo(5 / 8, 12);
    expect(agreement([1, 1, 1, 1], 1)).toBe(1);
  });
});

describe('responder reward (Eq. 6)', () => {
  test.each<[boolean, 0 | 1 | undefined, number]>([
    [true, 1, 1],
    [true, 0, 1], // the rule wins over a wrong majority
    [false, 1, 1], // the verifier rescues a paraphrase CEM misses
    [false, 0, 0],
    [true, undefined, 1], // no verifier judgments: R_rule
    [false, undefined, 0],
  ])('rule %s, majority %s → %i', (rule, majority, reward) => {
    expect(responderReward(rule, majority)).toBe(reward);
  });
});

describe('advantages (Eq. 8, 9)', () => {
  test('group z-score with the unbiased std + 1e-6', () => {
    const rewards = [1, 0, 0, 0, 1, 1, 0, 0];
    const mean = 3 / 8;
    const std = Math.sqrt((3 * (5 / 8) ** 2 + 5 * (3 / 8) ** 2) / 7);
    zScores(rewards, 1).forEach((a, i) =>
      expect(a).toBeCloseTo(((rewards[i] as number) - mean) / (std + 1e-6), 12),
    );
  });

  test('equal rewards give zero advantages, a single sample too', () => {
    expect(zScores([1, 1, 1, 1], 1)).toEqual([0, 0, 0, 0]);
    expect(zScores([-1], 1)).toEqual([0]);
  });
});
