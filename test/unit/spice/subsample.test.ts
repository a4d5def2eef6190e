import { seededRng } from '../../../activities/lib/rng';
import { subsampleKeepingRatio } from '../../../activities/recipes/spice/subsample';

interface Attempt {
  id: number;
  valid: boolean;
}
const attempts = (valid: number, invalid: number): Attempt[] =>
  Array.from({ length: valid + invalid }, (_, id) => ({ id, valid: id < valid }));
const isValid = (a: Attempt): boolean => a.valid;
const countValid = (chosen: Attempt[]): number => chosen.filter(isValid).length;

describe('subsampleKeepingRatio', () => {
  it.each<[number, number, number]>([
    // [valid, invalid, valid kept of 8]
    [4, 12, 2], // 8·4/16 = 2
    [5, 11, 3], // 2.5 rounds half up
    [3, 13, 2], // 1.5 rounds half up
    [9, 1, 7], // 7.2
    [1, 99, 1], // 0.08, raised to 1 because a valid attempt exists
    [0, 24, 0],
    [24, 0, 8],
    [8, 1, 7], // 7.1
  ])('%i valid / %i invalid → %i valid of 8', (valid, invalid, expected) => {
    const chosen = subsampleKeepingRatio(
      attempts(valid, invalid),
      isValid,
      8,
      seededRng('test', valid, invalid),
    );
    expect(chosen).toHaveLength(8);
    expect(countValid(chosen)).toBe(expected);
    expect(new Set(chosen.map((a) => a.id)).size).toBe(8);
  });

  it('returns every attempt when there are at most g', () => {
    const all = attempts(2, 3);
    const chosen = subsampleKeepingRatio(all, isValid, 8, seededRng('few'));
    expect(chosen).toEqual(all);
    expect(chosen).not.toBe(all);
  });

  it('keeps the original order and is deterministic for a given rng', () => {
    const all = attempts(10, 30);
    const first = subsampleKeepingRatio(all, isValid, 8, seededRng('seed', 1));
    const again = subsampleKeepingRatio(all, isValid, 8, seededRng('seed', 1));
    const other = subsampleKeepingRatio(all, isValid, 8, seededRng('seed', 2));
    expect(again).toEqual(first);
    expect(other.map((a) => a.id)).not.toEqual(first.map((a) => a.id));
    const ids = first.map((a) => a.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });
});
