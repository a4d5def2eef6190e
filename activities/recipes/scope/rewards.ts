import type { TrajectoryTurn } from '../../tools/types';
import { hasThink } from '../../scoring/tags';
import { mean } from '../role-stats';
import type { GradedRollout } from './records';

/**
 * SCOPE's rewards (scope.md §2), as pure functions of what the stages recorded. The weights are the paper's
 * constants, not parameters: R_C = 0.5·r_fmt + 1.0·1[QG]·f_diff(ḡ) and R_S = 1.0·L(a)·g + 0.5·F + 0.1·S.
 */

const CHALLENGER_FORMAT_WEIGHT = 0.5;
const SOLVER_FORMAT_WEIGHT = 0.5;
const SEARCH_BONUS_WEIGHT = 0.1;
/** S saturates at three searches (Eq. 6). */
const SEARCH_BONUS_SATURATION = 3;
/** τ of f_diff (Eq. 5). */
const TARGET_SCORE = 0.5;

const clamp01 = (x: number): number => Math.min(1, Math.max(0, x));
const thinkShare = (turns: readonly TrajectoryTurn[]): number =>
  mean(turns.map((t) => (hasThink(t.text) ? 1 : 0)));
const validSearches = (turns: readonly TrajectoryTurn[]): number =>
  turns.filter((t) => t.search?.valid).length;

/** g (Eq. 1): Σ w_k b_k / Σ w_k with uniform weights, i.e. the share of rubrics met; 0 without rubrics. */
export const rubricScore = (bits: readonly number[]): number => mean(bits);

/** g of one graded rollout: 0 without an answer (it has no grades). */
export const gradeOf = (r: GradedRollout): number => rubricScore(r.grades.map((g) => g.value));

/** ḡ: the mean g over a task's graded rollouts; 0 for none. */
export const meanGrade = (rollouts: readonly GradedRollout[]): number => mean(rollouts.map(gradeOf));

/** f_diff (Eq. 5): max(0, 1 − |ḡ − τ| / min(τ, 1 − τ)); with τ = 0.5, 1 − 2|ḡ − 0.5|. */
export function difficultyReward(meanScore: number, tau = TARGET_SCORE): number {
  return Math.max(0, 1 - Math.abs(meanScore - tau) / Math.min(tau, 1 - tau));
}

/**
 * r_fmt (§2) = (think + tool + structure) / 3: the share of turns with a closed `<think>`, the valid
 * non-empty searches over the expected budget (clamped to [0, 1]), and whether the final turn holds a task.
 */
export function challengerFormat(
  turns: readonly TrajectoryTurn[],
  searchBudget: number,
  hasTask: boolean,
): { think: number; tool: number; structure: number; score: number } {
  const think = thinkShare(turns);
  const tool = clamp01(validSearches(turns) / searchBudget);
  const structure = hasTask ? 1 : 0;
  return { think, tool, structure, score: (think + tool + structure) / 3 };
}

/**
 * R_C (Eq. 4). The paper contradicts itself for a task that fails a quality gate (§1.6 [!]): Algorithm 1
 * says "format only", R_C = r_fmt, while Eq. 4 with the gate indicator at 0 gives 0.5·r_fmt.
 * `scope.gateFailReward` picks the reading; the preset's is `eq4`, because under `algorithm1` a perfectly
 * formatted task that fails a gate (1.0) outscores every task that passes but is solved always or never
 * (0.5), which pays the Challenger to write the generic tasks the gates exist to stop (§7, generic-task
 * drift). With r_fmt = 0 the reward is 0 either way (§1.3). `meanScore` is ḡ over the Solver's rollouts,
 * without the length penalty; it is ignored unless `gatesPassed`.
 */
export function challengerReward(
  formatScore: number,
  gatesPassed: boolean,
  meanScore: number,
  gateFailReward: 'eq4' | 'algorithm1',
): number {
  if (formatScore === 0) return 0;
  if (!gatesPassed)
    return gateFailReward === 'algorithm1' ? formatScore : CHALLENGER_FORMAT_WEIGHT * formatScore;
  return CHALLENGER_FORMAT_WEIGHT * formatScore + difficultyReward(meanScore);
}

/** L(a) (Eq. 6): 1 up to ℓ_soft, a cosine down to ℓ_min at ℓ_hard, ℓ_min beyond. */
export function lengthPenalty(
  answerTokens: number,
  p: { softTokens: number; hardTokens: number; floor: number },
): number {
  if (answerTokens <= p.softTokens) return 1;
  if (answerTokens >= p.hardTokens) return p.floor;
  const progress = (answerTokens - p.softTokens) / (p.hardTokens - p.softTokens);
  return p.floor + ((1 - p.floor) / 2) * (1 + Math.cos(Math.PI * progress));
}

/**
 * F (Eq. 6) = (think + tool + answer) / 3: the share of turns with `<think>`; valid searches in the turns
 * before the last over their number, capped at 1 (a single-turn trajectory made no search before answering:
 * 0, where the paper's ratio is 0/0); and whether the final turn has an `<answer>`.
 */
export function solverFormat(turns: readonly TrajectoryTurn[], hasAnswer: boolean): number {
  const think = thinkShare(turns);
  const tool = turns.length > 1 ? Math.min(validSearches(turns.slice(0, -1)) / (turns.length - 1), 1) : 0;
  return (think + tool + (hasAnswer ? 1 : 0)) / 3;
}

/** S (Eq. 6) = min(valid searches in all turns / 3, 1): the bonus against early search avoidance (§7). */
export const searchBonus = (turns: readonly TrajectoryTurn[]): number =>
  Math.min(validSearches(turns) / SEARCH_BONUS_SATURATION, 1);

/** R_S (Eq. 6) = 1.0·L(a)·g + 0.5·F + 0.1·S, at most 1.6. */
export function solverReward(parts: {
  lengthPenalty: number;
  score: number;
  format: number;
  search: number;
}): number {
  return (
    parts.lengthPenalty * parts.score +
    SOLVER_FORMAT_WEIGHT * parts.format +
    SEARCH_BONUS_WEIGHT * parts.search
  );
}
