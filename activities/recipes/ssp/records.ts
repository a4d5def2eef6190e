import type { ChatMessage } from '../../clients/trainer-contract';
import type { TokenFields } from '../../clients/sampled-tokens';
import type { PlanUnit, Unit } from '../types';

/** SSP's records (docs/recipes/ssp.md): the plan unit, one record per stage, and the replay pool; plain JSON. */

export const PROPOSER = 'proposer';
export const SOLVER = 'solver';
/** The RAG verifier and the judge: helper calls whose outputs are never trained on (§1.5, §2). */
export const VERIFIER = 'verifier';
export const JUDGE = 'judge';

/** One ground-truth answer of D with what the proposer prompt needs (§1.1). */
export interface SspAnswer {
  answer: string;
  /** n: the searches the question should require. */
  searchTurns: number;
  /** Example questions shown to the proposer (the released data has 3); may be empty. */
  examples: string[];
}

export interface SspUnit extends PlanUnit, SspAnswer {}

/**
 * A multi-turn trajectory as stored: what the trainer needs plus what the filters read; with the sampled ids
 * per turn and the observations between them, the turns' log-probs, temperature and top-p, when the engine
 * returned ids (sampled-tokens.ts `tokenFields`).
 */
export interface StoredTrajectory extends TokenFields {
  completion: string;
  lossMaskSpans: Array<[number, number]>;
  /** Valid queries, in order. */
  searches: string[];
  /** The environment's `<information>` blocks, in order (RAG verification's materials). */
  information: string[];
  stop: string;
}

export interface SspProposal extends Unit {
  docIndex: number;
  messages: ChatMessage[];
  trajectory: StoredTrajectory;
  /** The first `<question>…</question>`, trimmed; null when there is none. */
  question: string | null;
}

/** A solver problem: a question and its ground truth. */
export interface Problem {
  question: string;
  answer: string;
}

/** Why a proposal is invalid before verification (§1.3–1.4). */
export type RuleFailure =
  | 'no_question'
  | 'too_short'
  | 'too_long'
  | 'too_few_words'
  | 'answer_in_question'
  | 'no_information'
  | 'too_few_searches'
  /** Fewer searches than the record's n, with `rules.requireSearchTurns`. */
  | 'fewer_searches_than_n'
  | 'repeated_query'
  | 'answer_in_query';

export interface SspGated extends Unit {
  docIndex: number;
  answer: string;
  /** The question when it passed the rule filter. */
  question?: string;
  rule: { passed: true } | { passed: false; reason: RuleFailure };
  /** RAG verification's prompt, built here because the noise comes from the shard's other trajectories. */
  verifierMessages?: ChatMessage[];
  /** What the solver answers instead when this slot ends up invalid (§1.6); absent with an empty pool. */
  replacement?: Problem;
}

/** Why RAG verification failed; `error` and `unparseable` are failures, never passes (§7, [C] pitfalls). */
export type VerificationFailure = 'wrong_answer' | 'unparseable' | 'error';

export interface Verification {
  completion: string;
  /** The text after `Answer:`; null when there is none. */
  answer: string | null;
  exactMatch: boolean;
  judge?: JudgeRecord;
  passed: boolean;
  failure?: VerificationFailure;
  /** The request's error message when the call failed. */
  error?: string;
}

export type Verdict = 'correct' | 'wrong' | 'unparseable';

export interface JudgeRecord {
  messages: ChatMessage[];
  completion: string;
  verdict: Verdict;
}

export interface SspSolved extends Unit {
  docIndex: number;
  /** Present when the rule filter passed and verification is on. */
  verification?: Verification;
  /** `own`: the slot's verified question; `replay`: a pool problem filling an invalid slot; `none`: nothing. */
  source: 'own' | 'replay' | 'none';
  problem?: Problem;
  messages?: ChatMessage[];
  trajectories: StoredTrajectory[];
}

export interface JudgedAnswer {
  /** The last `<answer>…</answer>`; null when there is none (reward 0). */
  answer: string | null;
  exactMatch: boolean;
  judge?: JudgeRecord;
  /** The answer tags counted in the completion (§2: more than the limit quarters the reward). */
  answerTags: number;
  reward: number;
}

export interface SspJudged extends Unit {
  docIndex: number;
  answers: JudgedAnswer[];
}

/** A verified problem with the success rate its solver group had; what the replay pool holds. */
export interface PoolProblem extends Problem {
  successRate: number;
  iteration: number;
}

/** The recipe state: the replay pool of the current reset window. */
export interface SspState {
  v: 1;
  pool: PoolProblem[];
}
