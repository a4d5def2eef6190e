/**
 * Advantage estimators over groups of rewards. SPICE uses Dr.GRPO (reward minus group mean, no std
 * division, §2.4); the others serve the baselines (R-Zero: GRPO, Absolute Zero: REINFORCE++) and ablations.
 */

export type AdvantageEstimator = 'dr_grpo' | 'grpo' | 'rloo' | 'reinforce' | 'reinforce_pp';

/** Added to the std so that a group (or batch) with equal rewards gets zero advantages, not NaN. */
const STD_EPSILON = 1e-6;

/**
 * Advantages within one group:
 * - dr_grpo: r − mean;
 * - grpo: (r − mean) / (std + 1e-6), with the population std (divide by G, as TRL and Oat do; the GRPO
 *   paper does not say which);
 * - rloo: r − mean of the other G−1 rewards (0 for a group of one, which has no others);
 * - reinforce: r, no baseline;
 * - reinforce_pp: normalises over the batch, not the group; a single group is its own batch here.
 */
export function groupAdvantages(estimator: AdvantageEstimator, rewards: readonly number[]): number[] {
  switch (estimator) {
    case 'dr_grpo': {
      const m = mean(rewards);
      return rewards.map((r) => r - m);
    }
    case 'grpo':
      return batchNormalizedAdvantages(rewards);
    case 'rloo': {
      if (rewards.length < 2) return rewards.map(() => 0);
      const total = sum(rewards);
      return rewards.map((r) => r - (total - r) / (rewards.length - 1));
    }
    case 'reinforce':
      return [...rewards];
    case 'reinforce_pp':
      return batchNormalizedAdvantages(rewards);
  }
}

/** REINFORCE++: (r − mean) / (std + 1e-6) over the whole batch, with the population std. */
export function batchNormalizedAdvantages(rewards: readonly number[]): number[] {
  return zScores(rewards, 0);
}

/**
 * (r − mean) / (std + 1e-6), the std dividing by n − ddof: 0 for the population std, 1 for the unbiased
 * one (torch's default, which verl's GRPO uses). Fewer than ddof + 1 rewards have no spread: std 0.
 */
export function zScores(rewards: readonly number[], ddof: 0 | 1): number[] {
  const m = mean(rewards);
  const dof = rewards.length - ddof;
  const std = dof > 0 ? Math.sqrt(sum(rewards.map((r) => (r - m) ** 2)) / dof) : 0;
  return rewards.map((r) => (r - m) / (std + STD_EPSILON));
}

/** Advantages for every group; reinforce_pp normalises over all groups' rewards together. */
export function computeAdvantages(
  estimator: AdvantageEstimator,
  groups: readonly (readonly number[])[],
): number[][] {
  if (estimator !== 'reinforce_pp') return groups.map((g) => groupAdvantages(estimator, g));
  const flat = batchNormalizedAdvantages(groups.flat());
  let offset = 0;
  return groups.map((g) => {
    const slice = flat.slice(offset, offset + g.length);
    offset += g.length;
    return slice;
  });
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function mean(values: readonly number[]): number {
  return values.length === 0 ? 0 : sum(values) / values.length;
}
