import {
  proposerAdvantage,
  proposerReward,
  solverAdvantages,
  solverReward,
  successRate,
} from '../../../activities/recipes/ssp/rewards';
import { SSP_DEFAULTS } from '../../../config/presets/ssp';

describe('SSP rewards and advantages (ssp.md §1.8–1.9, §2)', () => {
  test.each([
    [true, 1, 1],
    [true, 10, 1],
    [true, 11, 0.25],
    [false, 1, 0],
    [false, 20, 0],
  ])('solverReward(correct=%j, tags=%i) = %d', (correct, tags, r) => {
    expect(solverReward(correct, tags, SSP_DEFAULTS)).toBe(r);
  });

  test.each([
    // n = 5: R = 1 − k/5 for a valid question, 0 for an invalid one whatever its slot's solver did.
    [true, [0, 0, 0, 0, 0], 1],
    [true, [1, 0, 0, 0, 0], 0.8],
    [true, [1, 1, 0.25, 0, 0], 0.4],
    [true, [1, 1, 1, 1, 1], 0],
    [false, [0, 0, 0, 0, 0], 0],
    [false, [1, 1, 1, 1, 1], 0],
    [false, [], 0],
  ])('proposerReward(valid=%j, %j) = %d', (valid, rewards, r) => {
    expect(proposerReward(valid, rewards)).toBeCloseTo(r, 12);
  });

  test('success is r > 0: a spam-quartered correct answer counts', () => {
    expect(successRate([0.25, 0, 0, 0])).toBe(0.25);
    expect(successRate([])).toBe(0);
  });

  test('proposer: REINFORCE without baseline, the advantage is the reward', () => {
    for (const r of [0, 0.2, 0.6, 1]) expect(proposerAdvantage(r)).toBe(r);
  });

  test('solver grpo_std: (r − mean) / (unbiased std + 1e-6), as verl', () => {
    // rewards 1,0,0,0,0: mean 0.2, unbiased std sqrt(0.8/4) = 0.4472136
    const a = solverAdvantages('grpo_std', [1, 0, 0, 0, 0]);
    expect(a[0]).toBeCloseTo(0.8 / (Math.sqrt(0.2) + 1e-6), 9);
    expect(a[1]).toBeCloseTo(-0.2 / (Math.sqrt(0.2) + 1e-6), 9);
    expect(solverAdvantages('grpo_std', [1, 1, 1, 1, 1])).toEqual([0, 0, 0, 0, 0]);
  });

  test('solver mean: Eq. 4, r − mean', () => {
    const a = solverAdvantages('mean', [1, 1, 0, 0, 0]);
    [0.6, 0.6, -0.4, -0.4, -0.4].forEach((x, i) => expect(a[i]).toBeCloseTo(x, 12));
  });
});
