/**
 * SPICE rewards (§2.1). The Challenger's reward for a valid task peaks when the Reasoner's pass rate over
 * its G answers is 50%; the ablation rewards are the baselines' curricula. Invalid tasks get
 * SPICE_DEFAULTS.invalidPenalty from the caller instead.
 */

export type ChallengerRewardKind = 'gaussian' | 'absolute_zero' | 'threshold' | 'r_zero';

/** The paper's constants (§1, §2.1). */
export const SPICE_DEFAULTS = {
  /** ρ: the Challenger's reward for an invalid task. */
  invalidPenalty: -0.1,
  /** τ: width of the Gaussian around the target variance. */
  tau: 0.01,
  /** σ²_opt: the variance of a pass rate of 50%. */
  targetVariance: 0.25,
  /** G: Challenger attempts kept per document, and Reasoner answers per task. */
  groupSize: 8,
  /** N: Challenger attempts per document before giving up on finding a valid task. */
  maxAttempts: 1024,
} as const;

export interface ChallengerRewardParams {
  tau: number;
  targetVariance: number;
}

/**
 * The Challenger's reward for a valid task, from the correctness of the Reasoner's answers:
 * - gaussian (Eq. 1): exp(−(p(1−p) − σ²_opt)² / (2τ)), p(1−p) being the population variance of the 0/1
 *   outcomes; for G=8 it is 0.0439, 0.372, 0.823, 0.988, 1.0 at k = 0..4 (symmetric in k);
 * - absolute_zero: 1 − p for 0 < p < 1, else 0;
 * - threshold: 1 for 0 < k < G, else 0;
 * - r_zero: 1 − 2|p − 0.5|.
 */
export function challengerReward(
  kind: ChallengerRewardKind,
  correct: readonly boolean[],
  params: ChallengerRewardParams,
): number {
  if (correct.length === 0) throw new RangeError('challengerReward needs at least one Reasoner answer');
  const k = correct.filter(Boolean).length;
  const p = k / correct.length;
  const mixed = k > 0 && k < correct.length;
  switch (kind) {
    case 'gaussian':
      return Math.exp(-((p * (1 - p) - params.targetVariance) ** 2) / (2 * params.tau));
    case 'absolute_zero':
      return mixed ? 1 - p : 0;
    case 'threshold':
      return mixed ? 1 : 0;
    case 'r_zero':
      return 1 - 2 * Math.abs(p - 0.5);
  }
}

/** The Reasoner's reward: 1 for a correct answer, else 0 (no format reward, §2.1). */
export function reasonerReward(correct: boolean): number {
  return correct ? 1 : 0;
}
