import { challengerReward, reasonerReward, SPICE_DEFAULTS } from '../../../activities/recipes/spice/rewards';

const params = { tau: SPICE_DEFAULTS.tau, targetVariance: SPICE_DEFAULTS.targetVariance };
/** G = 8 answers with k correct. */
const outcomes = (k: number, g = 8): boolean[] => Array.from({ length: g }, (_, i) => i < k);

describe('challengerReward', () => {
  // Spec §2.1 table, at its stated precision (digits after the point).
  it.each<[number, number, number]>([
    [0, 0.0439, 4],
    [1, 0.372, 3],
    [2, 0.823, 3],
    [3, 0.988, 3],
    [4, 1.0, 10],
    [5, 0.988, 3],
    [6, 0.823, 3],
    [7, 0.372, 3],
    [8, 0.0439, 4],
  ])('gaussian at k=%i of 8 is %d', (k, expected, digits) => {
    expect(challengerReward('gaussian', outcomes(k), params)).toBeCloseTo(expected, digits);
  });

  it('gaussian stays above the invalid penalty even at p = 0 or 1', () => {
    expect(challengerReward('gaussian', outcomes(0), params)).toBeGreaterThan(SPICE_DEFAULTS.invalidPenalty);
  });

  it('depends on the count, not the order, of correct answers', () => {
    const shuffled = [false, true, false, false, true, false, false, false];
    expect(challengerReward('gaussian', shuffled, params)).toBeCloseTo(
      challengerReward('gaussian', outcomes(2), params),
      12,
    );
  });

  it('uses the given tau and target variance', () => {
    const wide = challengerReward('gaussian', outcomes(0), { tau: 1, targetVariance: 0.25 });
    expect(wide).toBeCloseTo(Math.exp(-0.0625 / 2), 10);
    expect(challengerReward('gaussian', outcomes(2), { tau: 0.01, targetVariance: 0.1875 })).toBe(1);
  });

  it.each<[number, number]>([
    [0, 0],
    [1, 0.875],
    [2, 0.75],
    [4, 0.5],
    [7, 0.125],
    [8, 0],
  ])('absolute_zero at k=%i of 8 is %d', (k, expected) => {
    expect(challengerReward('absolute_zero', outcomes(k), params)).toBeCloseTo(expected, 12);
  });

  it.each<[number, number]>([
    [0, 0],
    [1, 1],
    [4, 1],
    [7, 1],
    [8, 0],
  ])('threshold at k=%i of 8 is %d', (k, expected) => {
    expect(challengerReward('threshold', outcomes(k), params)).toBe(expected);
  });

  it.each<[number, number]>([
    [0, 0],
    [1, 0.25],
    [2, 0.5],
    [4, 1],
    [6, 0.5],
    [8, 0],
  ])('r_zero at k=%i of 8 is %d', (k, expected) => {
    expect(challengerReward('r_zero', outcomes(k), params)).toBeCloseTo(expected, 12);
  });

  it('refuses an empty answer group', () => {
    expect(() => challengerReward('gaussian', [], params)).toThrow(RangeError);
  });
});

describe('reasonerReward and defaults', () => {
  it('is 1 for correct, 0 otherwise', () => {
    expect(reasonerReward(true)).toBe(1);
    expect(reasonerReward(false)).toBe(0);
  });

  it('holds the paper constants', () => {
    expect(SPICE_DEFAULTS).toEqual({
      invalidPenalty: -0.1,
      tau: 0.01,
      targetVariance: 0.25,
      groupSize: 8,
      maxAttempts: 1024,
    });
  });
});
