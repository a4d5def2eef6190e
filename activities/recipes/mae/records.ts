import type { ChatMessage } from '../../clients/trainer-contract';
import type { SampledTokens } from '../../clients/sampled-tokens';
import type { JudgeScore } from '../../judges/score';
import type { PlanUnit, Unit } from '../types';

/**
 * MAE's records (spec mae.md §1), all plain JSON. One unit of an iteration carries one of each role's
 * samples: a proposer prompt, a solver question drawn from D and a judge pair drawn from P.
 */

/** The three roles, which are also the inference endpoints' role names (`inference.roles.<role>`). */
export const PROPOSER = 'proposer';
export const SOLVER = 'solver';
export const JUDGE = 'judge';

/** A (question, answer) pair of P; the answer is what the Judge was shown of the Solver's output. */
export interface QaPair {
  question: string;
  answer: string;
}

/**
 * The recipe state: the question pool D (seeds first, then every question that passed the gate, in order)
 * and the pair pool P. Committed with every iteration; the next one plans from exactly this.
 */
export interface MaeState {
  v: 1;
  /** The first `seedCount` questions of D are D0. */
  seedCount: number;
  questions: string[];
  pairs: QaPair[];
}

export interface MaePlanUnit extends PlanUnit {
  /** q_ref for the L3 prompt; absent: the L2 prompt, without a reference. */
  reference?: string;
  /** The trained Solver's question, drawn uniformly from D. */
  solverQuestion: string;
  /** The trained Judge's pair, drawn uniformly from P; absent while P is empty or the Judge is frozen. */
  judgePair?: QaPair;
}

/** One generation of the policy, as a training row needs it. */
export interface Generation {
  messages: ChatMessage[];
  completion: string;
  finishReason: string;
  /** The sampled ids, when the engine returned them. */
  sampled?: SampledTokens;
}

/**
 * Why a proposal did not yield a question (its r_P is 0), or why its question stayed out of D: below the
 * quality threshold, or one of `mae.excludeQuestions`.
 */
export type QuestionRejection =
  'no_question' | 'empty_question' | 'placeholder' | 'below_threshold' | 'excluded';

export interface MaeProposal extends Unit {
  docIndex: number;
  proposer: Generation;
  /** The last `<question>` pair's content, when it is a question. */
  question?: string;
  invalid?: Exclude<QuestionRejection, 'below_threshold' | 'excluded'>;
  /** The Judge's L5 score of the question (reward-only); absent when there is no question. */
  quality?: JudgeScore;
}

export interface MaeGated extends Unit {
  docIndex: number;
  question?: string;
  /** The question enters D (quality ≥ threshold, or the quality filter is off). */
  accepted: boolean;
  rejected?: QuestionRejection;
  solverQuestion: string;
  judgePair?: QaPair;
}

export interface MaeSolved extends Unit {
  docIndex: number;
  /** N_sample answers to the proposed question (reward-only); absent when its difficulty is not needed. */
  difficulty?: { question: string; messages: ChatMessage[]; completions: string[] };
  solver: Generation;
}

export interface MaeJudged extends Unit {
  docIndex: number;
  /** V_J of each difficulty answer, in the order of `MaeSolved.difficulty.completions`. */
  difficultyScores?: JudgeScore[];
  /** V_J of the trained Solver's answer. */
  solverScore: JudgeScore;
  /** The trained Judge's L4 evaluation of its pair from P; rewarded for its format only. */
  judge?: Generation & { pair: QaPair };
}
