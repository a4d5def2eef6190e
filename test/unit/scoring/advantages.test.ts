import {
  batchNormalizedAdvantages,
  computeAdvantages,
  groupAdvantages,
} from '../../../activities/scoring/advantages';

const closeTo = (actual: number[], expected: number[], digits = 6): void => {
  expect(actual).toHaveLength(expected.length);
  actual.forEach((a, i) => expect(a).toBeCloseTo(expected[i] as number, digits));
};

describe('groupAdvantages', () => {
  it('dr_grpo centres on the group mean without std division', () => {
    closeTo(groupAdvantages('dr_grpo', [1, 0, 0, 1]), [0.5, -0.5, -0.5, 0.5]);
    closeTo(groupAdvantages('dr_grpo', [1, 0, 0, 0]), [0.75, -0.25, -0.25, -0.25]);
    closeTo(groupAdvantages('dr_grpo', [0.0439, 1, -0.1, 0.372]), [-0.2851, 0.671, -0.429, 0.043], 4);
  });

  it('grpo divides by the population std plus 1e-6', () => {
    // mean 0.5, population std 0.5 (the sample std would be 0.577).
    closeTo(groupAdvantages('grpo', [1, 0, 0, 1]), [
      0.5 / 0.500001,
      -0.5 / 0.500001,
      -0.5 / 0.500001,
      0.5 / 0.500001,
    ]);
    // mean 0.25, population std sqrt(0.1875) = 0.4330127.
    closeTo(groupAdvantages('grpo', [1, 0, 0, 0]), [1.7320468, -0.5773489, -0.5773489, -0.5773489]);
  });

  it('rloo subtracts the mean of the other rewards', () => {
    closeTo(groupAdvantages('rloo', [1, 0, 0, 0]), [1, -1 / 3, -1 / 3, -1 / 3]);
    closeTo(groupAdvantages('rloo', [1, 1, 0]), [0.5, 0.5, -1]);
    expect(groupAdvantages('rloo', [0.7])).toEqual([0]);
  });

  it('reinforce uses the raw rewards', () => {
    expect(groupAdvantages('reinforce', [1, 0, 0.5])).toEqual([1, 0, 0.5]);
  });

  it.each(['dr_grpo', 'grpo', 'rloo'] as const)(
    '%s gives zero advantages to a group of equal rewards',
    (estimator) => {
      expect(groupAdvantages(estimator, [1, 1, 1, 1])).toEqual([0, 0, 0, 0]);
      expect(groupAdvantages(estimator, [0, 0, 0])).toEqual([0, 0, 0]);
    },
  );

  it('handles an empty group', () => {
    expect(groupAdvantages('dr_grpo', [])).toEqual([]);
  });
});

describe('batchNormalizedAdvantages', () => {
  it('normalises over the whole batch', () => {
    closeTo(batchNormalizedAdvantages([1, 0, 1, 1]), [0.5773489, -1.7320468, 0.5773489, 0.5773489]);
    expect(batchNormalizedAdvantages([2, 2])).toEqual([0, 0]);
  });
});

describe('computeAdvantages', () => {
  it('applies group estimators group by group', () => {
    const out = computeAdvantages('dr_grpo', [
      [1, 0],
      [1, 1, 1],
    ]);
    closeTo(out[0] as number[], [0.5, -0.5]);
    closeTo(out[1] as number[], [0, 0, 0]);
  });

  it('reinforce_pp normalises over all groups flattened, keeping the group shapes', () => {
    const out = computeAdvantages('reinforce_pp', [[1, 0], [1, 1], []]);
    expect(out.map((g) => g.length)).toEqual([2, 2, 0]);
    closeTo(out.flat(), [0.5773489, -1.7320468, 0.5773489, 0.5773489]);
    // A group of equal rewards still gets non-zero advantages from the batch baseline.
    expect(out[1]?.[0]).toBeGreaterThan(0);
  });
});
