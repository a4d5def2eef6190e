/**
 * MAE's role rewards (spec mae.md §2.3), all scalar outcome rewards in [0, 1] with the default weights.
 * The inputs are already scored: judge values in [0, 1] (neutral 0.5 on a parse fallback) and format
 * rewards of 1 / 0.5 / 0.
 */
import type { MaeParams } from '../../../config/presets/mae';

/** The reference code's binary difficulty pays for questions whose mean solve score is below this. */
export const BINARY_DIFFICULTY_THRESHOLD = 0.7;

type RewardParams = Pick<
  MaeParams,
  'proposerWeights' | 'solverWeights' | 'difficulty' | 'zeroDifficultyWhenRejected' | 'formatReward'
>;

/** R̄_S: the mean judge score of the N_sample answers. */
export function meanSolveScore(scores: readonly number[]): number {
  if (scores.length === 0) throw new RangeError('the mean solve score needs at least one judged answer');
  return scores.reduce((a, b) => a + b, 0) / scores.length;
}

/** R_difficulty: 1 − R̄_S (the paper), or 𝟙[R̄_S < 0.7] (the reference code's option). */
export function difficultyReward(kind: MaeParams['difficulty'], solveScores: readonly number[]): number {
  const mean = meanSolveScore(solveScores);
  return kind === 'linear' ? 1 - mean : mean < BINARY_DIFFICULTY_THRESHOLD ? 1 : 0;
}

export type ProposerOutcome =
  /** No question could be extracted: r_P = 0 (the reference code's rule). */
  | { question: false; format: number }
  | {
      question: true;
      format: number;
      quality: number;
      accepted: boolean;
      /** V_J of the N_sample answers; absent when the difficulty term is zeroed for a rejected question. */
      solveScores?: readonly number[];
    };

/**
 * r_P = λq·R_quality + λd·R_difficulty + λf·R_format. A rejected question still earns its reward (the gate
 * only keeps it out of D), unless `zeroDifficultyWhenRejected`, which drops its difficulty term.
 */
export function proposerReward(params: RewardParams, outcome: ProposerOutcome): number {
  if (!outcome.question) return 0;
  const w = params.proposerWeights;
  const zeroed = params.zeroDifficultyWhenRejected && !outcome.accepted;
  if (!zeroed && outcome.solveScores === undefined)
    throw new Error('a proposed question needs its solve scores for the difficulty reward');
  const difficulty = zeroed ? 0 : difficultyReward(params.difficulty, outcome.solveScores ?? []);
  return (
    w.quality * outcome.quality + w.difficulty * difficulty + w.format * formatTerm(params, outcome.format)
  );
}

/** r_S = λj·V_J(a, q) + λf·R_format(`<answer>`). */
export function solverReward(params: RewardParams, judge: number, format: number): number {
  return params.solverWeights.judge * judge + params.solverWeights.format * formatTerm(params, format);
}

/** r_J = R_format(`<score>`): the Judge has no accuracy or consistency reward (§1 step 6). */
export function judgeReward(params: RewardParams, format: number): number {
  return formatTerm(params, format);
}

/** The format-reward ablation removes the term from every role (the Judge is then left with no signal). */
const formatTerm = (params: RewardParams, format: number): number => (params.formatReward ? format : 0);
