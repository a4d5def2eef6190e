import type { TrajectoryTurn } from '../../../activities/tools/types';
import {
  challengerFormat,
  challengerReward,
  difficultyReward,
  lengthPenalty,
  rubricScore,
  searchBonus,
  solverFormat,
  solverReward,
} from '../../../activities/recipes/scope/rewards';

const LP = { softTokens: 1024, hardTokens: 2048, floor: 0.05 };

const turn = (text: string, search?: { query: string; valid: boolean }): TrajectoryTurn => ({
  text,
  ...(search ? { search } : {}),
  finishReason: 'stop',
});
const searchTurn = (query = 'Hoover Dam', valid = true) =>
  turn(`<think>look it up</think><search>${query}</search>`, { query, valid });

describe('SCOPE rewards (scope.md §2)', () => {
  test.each([
    [0, 1],
    [512, 1],
    [1024, 1],
    // Halfway: ℓ_min + (1 − ℓ_min)/2 · (1 + cos(π/2)) = 0.05 + 0.475 = 0.525.
    [1536, 0.525],
    [2048, 0.05],
    [3000, 0.05],
  ])('L(a) at %i answer tokens is %f', (tokens, expected) => {
    expect(lengthPenalty(tokens, LP)).toBeCloseTo(expected, 12);
  });

  test('L(a) falls monotonically between the limits, by the cosine', () => {
    // A quarter of the way: 0.05 + 0.475 · (1 + cos(π/4)).
    expect(lengthPenalty(1280, LP)).toBeCloseTo(0.05 + 0.475 * (1 + Math.SQRT1_2), 12);
    const values = [1025, 1300, 1600, 1900, 2047].map((t) => lengthPenalty(t, LP));
    for (let i = 1; i < values.length; i++) expect(values[i]).toBeLessThan(values[i - 1] as number);
  });

  test.each([
    [0, 0],
    [0.25, 0.5],
    [0.5, 1],
    [0.75, 0.5],
    [1, 0],
  ])('f_diff(%f) = %f (τ = 0.5)', (g, expected) => {
    expect(difficultyReward(g)).toBeCloseTo(expected, 12);
  });

  test('f_diff with another τ uses min(τ, 1 − τ) and is floored at 0', () => {
    expect(difficultyReward(0.3, 0.3)).toBe(1);
    expect(difficultyReward(0.6, 0.3)).toBe(0);
    expect(difficultyReward(0.45, 0.3)).toBeCloseTo(0.5, 12);
  });

  // R_C = 0.5·r_fmt + 1[QG]·(1 − 2|ḡ − 0.5|), at r_fmt = 1 and r_fmt = 2/3.
  test.each([
    [1, true, 0, 0.5, 0.5],
    [1, true, 0.25, 1, 1],
    [1, true, 0.5, 1.5, 1.5],
    [1, true, 1, 0.5, 0.5],
    [1, false, 0.5, 0.5, 1],
    [2 / 3, true, 0.5, 4 / 3, 4 / 3],
    [2 / 3, false, 0.5, 1 / 3, 2 / 3],
    [0, false, 0, 0, 0],
  ])('R_C(r_fmt=%f, gates=%s, ḡ=%f): eq4 %f, algorithm1 %f', (fmt, gates, g, eq4, algorithm1) => {
    expect(challengerReward(fmt, gates, g, 'eq4')).toBeCloseTo(eq4, 12);
    expect(challengerReward(fmt, gates, g, 'algorithm1')).toBeCloseTo(algorithm1, 12);
  });

  test('R_C ignores ḡ when a gate failed, and is 0 whenever r_fmt is 0', () => {
    expect(challengerReward(1, false, 0.5, 'eq4')).toBe(challengerReward(1, false, 0, 'eq4'));
    expect(challengerReward(0, true, 0.5, 'eq4')).toBe(0);
  });

  test('r_fmt = (think + tool + structure)/3', () => {
    const final = turn('<think>checklist</think><task><question>Q</question></task>');
    // Budget 2, two searches, every turn thinks, a task: 1.
    expect(challengerFormat([searchTurn(), searchTurn(), final], 2, true)).toEqual({
      think: 1,
      tool: 1,
      structure: 1,
      score: 1,
    });
    // Budget 3, one valid search and one empty one, no think in the final turn, a task.
    const mixed = challengerFormat([searchTurn(), searchTurn('', false), turn('<task>Q</task>')], 3, true);
    expect(mixed).toMatchObject({ think: 2 / 3, tool: 1 / 3, structure: 1 });
    expect(mixed.score).toBeCloseTo((2 / 3 + 1 / 3 + 1) / 3, 12);
    // More searches than the budget: tool clamps at 1; no task: structure 0.
    expect(challengerFormat([searchTurn(), searchTurn(), turn('no task')], 1, false)).toMatchObject({
      tool: 1,
      structure: 0,
      think: 2 / 3,
    });
    // An unclosed think does not count.
    expect(challengerFormat([turn('<think>never closed <task>Q</task>')], 1, true)).toEqual({
      think: 0,
      tool: 0,
      structure: 1,
      score: 1 / 3,
    });
    expect(challengerFormat([turn('nothing')], 2, false).score).toBe(0);
  });

  test('F = (think + tool + answer)/3 and S = min(searches/3, 1)', () => {
    const answer = turn('<think>done</think><answer>A</answer>');
    expect(solverFormat([searchTurn(), searchTurn(), answer], true)).toBe(1);
    // Searches only in non-final turns count for tool: 1 of 2 non-final turns searched validly.
    expect(solverFormat([searchTurn(), turn('<think>hm</think>'), answer], true)).toBeCloseTo(
      (1 + 0.5 + 1) / 3,
      12,
    );
    // A single turn made no search before answering: tool 0 (the paper's 0/0).
    expect(solverFormat([answer], true)).toBeCloseTo(2 / 3, 12);
    expect(solverFormat([turn('plain answer')], false)).toBe(0);
    expect(searchBonus([answer])).toBe(0);
    expect(searchBonus([searchTurn(), answer])).toBeCloseTo(1 / 3, 12);
    expect(searchBonus([searchTurn(), searchTurn('', false), answer])).toBeCloseTo(1 / 3, 12);
    expect(searchBonus([searchTurn(), searchTurn(), searchTurn(), searchTurn(), answer])).toBe(1);
  });

  test('g is the share of rubrics met; R_S = L·g + 0.5·F + 0.1·S, at most 1.6', () => {
    expect(rubricScore([1, 0, 1, 1])).toBe(0.75);
    expect(rubricScore([])).toBe(0);
    expect(solverReward({ lengthPenalty: 1, score: 1, format: 1, search: 1 })).toBeCloseTo(1.6, 12);
    expect(solverReward({ lengthPenalty: 0.525, score: 0.8, format: 2 / 3, search: 1 / 3 })).toBeCloseTo(
      0.42 + 1 / 3 + 1 / 30,
      12,
    );
    expect(solverReward({ lengthPenalty: 0.05, score: 0, format: 0, search: 0 })).toBe(0);
  });
});
