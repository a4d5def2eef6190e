import { groupAdvantages, zScores } from '../../scoring/advantages';
import type { SspParams } from '../../../config/presets/ssp';

/**
 * SSP's rewards and advantages (ssp.md §1.8–1.9, §2). The solver is rewarded for reproducing the ground
 * truth; the proposer for the solver's failures on a valid question, and never below 0 for an invalid one
 * (a negative penalty starts the "death spiral" of §7).
 */

/** r_solve = 1 for a correct answer, 0 without one or a wrong one; ×`tagSpamFactor` past `answerTagLimit` tags. */
export function solverReward(
  correct: boolean,
  answerTags: number,
  p: Pick<SspParams, 'answerTagLimit' | 'tagSpamFactor'>,
): number {
  if (!correct) return 0;
  return answerTags > p.answerTagLimit ? p.tagSpamFactor : 1;
}

/** The share of the group counted a success, 1[r > 0] as in the code (a spam-quartered answer still counts). */
export function successRate(rewards: readonly number[]): number {
  return rewards.length === 0 ? 0 : rewards.filter((r) => r > 0).length / rewards.length;
}

/** Eq. 7: R(τ) = 1 − success rate for a valid question, 0 for an invalid one. */
export function proposerReward(valid: boolean, solverRewards: readonly number[]): number {
  return valid ? 1 - successRate(solverRewards) : 0;
}

/**
 * The solver's group advantages: `grpo_std` is verl's (r − mean) / (unbiased std + 1e-6), `mean` is Eq. 4's
 * r − mean (the shared Dr.GRPO estimator).
 */
export function solverAdvantages(kind: SspParams['solverAdvantage'], rewards: readonly number[]): number[] {
  return kind === 'grpo_std' ? zScores(rewards, 1) : groupAdvantages('dr_grpo', rewards);
}

/** Eq. 5: REINFORCE without a baseline, so the advantage is the reward itself. */
export function proposerAdvantage(reward: number): number {
  return groupAdvantages('reinforce', [reward])[0] ?? 0;
}
