import type { JudgedResponse, Vote } from './records';

/**
 * SPELL's rewards (spell.md §2). The responder's reward is the better of the rule and the verifiers'
 * majority, so a paraphrase CEM misses still counts; the verifier is rewarded for agreeing with its own
 * majority; the questioner for questions the responder solves about half the time.
 */

export type QuestionerRewardKind = 'gaussian' | 'absolute_zero' | 'r_zero';

/**
 * r_que of a solvable question from the responder's mean reward r̄ (Eq. 7): 0 at r̄ ∈ {0, 1}, else
 * - gaussian: exp(−(r̄ − 0.5)² / (2σ²)); with σ = 0.5/3 and G = 8, k = 1..7 correct give 0.080, 0.325,
 *   0.755, 1.0, 0.755, 0.325, 0.080;
 * - absolute_zero (AZR): 1 − r̄;
 * - r_zero (R-Zero): 1 − 2|r̄ − 0.5|.
 */
export function questionerReward(kind: QuestionerRewardKind, meanReward: number, sigma: number): number {
  if (meanReward <= 0 || meanReward >= 1) return 0;
  switch (kind) {
    case 'gaussian':
      return Math.exp(-((meanReward - 0.5) ** 2) / (2 * sigma ** 2));
    case 'absolute_zero':
      return 1 - meanReward;
    case 'r_zero':
      return 1 - 2 * Math.abs(meanReward - 0.5);
  }
}

/** Eq. 4: v_i = 1 iff more than half of the G judgments say [[YES]] (an invalid judgment is not a yes). */
export function majorityVote(votes: readonly Vote[]): 0 | 1 {
  return votes.filter((v) => v === 1).length > votes.length / 2 ? 1 : 0;
}

/** Eq. 5: r_ij = 1 when judgment j agrees with the majority, 0 when not, −1 when it is invalid. */
export function verifierRewards(votes: readonly Vote[], majority: 0 | 1): number[] {
  return votes.map((v) => (v === -1 ? -1 : v === majority ? 1 : 0));
}

/** The share of the G judgments equal to the majority: the verifier sampling's consensus filter (§4). */
export function agreement(votes: readonly Vote[], majority: 0 | 1): number {
  return votes.length === 0 ? 0 : votes.filter((v) => v === majority).length / votes.length;
}

/** Eq. 6: r_i = max(R_rule, v_i); without verifier judgments (no parseable answer, or no verifier), R_rule. */
export function responderReward(rule: boolean, majority: 0 | 1 | undefined): number {
  return Math.max(rule ? 1 : 0, majority ?? 0);
}

/** Each judged response's verifier majority (none without votes) and its reward r_res (Eq. 6). */
export function scoreResponses(
  responses: readonly JudgedResponse[],
): Array<JudgedResponse & { majority: 0 | 1 | undefined; reward: number }> {
  return responses.map((r) => {
    const majority = r.verifier ? majorityVote(r.verifier.votes) : undefined;
    return { ...r, majority, reward: responderReward(r.rule, majority) };
  });
}

/** A responder group the step can train: its G rewards are not all equal (std(r_res) > 0, §1.10). */
export const hasSpread = (rewards: readonly number[]): boolean => new Set(rewards).size > 1;
