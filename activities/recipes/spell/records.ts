import type { SampledTokens } from '../../clients/sampled-tokens';
import type { ChatMessage } from '../../clients/trainer-contract';
import type { PlanUnit, Unit } from '../types';

/** SPELL's records: the plan unit, one record per stage, and the history memory; all plain JSON. */

export const QUESTIONER = 'questioner';
export const RESPONDER = 'responder';
export const VERIFIER = 'verifier';
export type SpellRole = typeof QUESTIONER | typeof RESPONDER | typeof VERIFIER;

/** The three task formats (§1.1): DocMath-style numeric QA, general QA, multiple choice. */
export const SPELL_TASKS = ['general_qa', 'multiple_choice', 'financial_math'] as const;
export type SpellTask = (typeof SPELL_TASKS)[number];

export const LETTERS = ['A', 'B', 'C', 'D'] as const;
export type Letter = (typeof LETTERS)[number];

/** A parsed questioner output: the question, its reference answer (a letter for MC) and MC options. */
export interface SpellQuestion {
  task: SpellTask;
  question: string;
  answer: string;
  options?: Record<Letter, string>;
}

export interface ClusterDocument {
  /** The corpus segment id: stable across loads, so the history can name documents. */
  id: string;
  text: string;
}

/** One (question, answer) pair of the history, as the with-history prompt shows it. */
export interface Example {
  question: string;
  answer: string;
}

/** H[(task, cluster)] entry (§1): the documents the questioner saw, and the solvable pair it wrote. */
export interface HistoryEntry extends Example {
  docs: string[];
}

/** The recipe state: the history memory, FIFO of L entries per `task/cluster` key. */
export interface SpellState {
  v: 1;
  history: Record<string, HistoryEntry[]>;
}

/** One planned (cluster, task) item with the questioner's context, built from the committed history. */
export interface SpellUnit extends PlanUnit {
  cluster: string;
  task: SpellTask;
  /** Every document of the cluster, in index order: the responder sees them all (§1.6). */
  documents: ClusterDocument[];
  /** Ids of the documents the questioner sees: H's union plus up to m new ones, in index order. */
  questionerDocs: string[];
  /** H's (q, a) pairs, oldest first; empty selects the without-history template. */
  examples: Example[];
  /** MC only: the letter the questioner is asked to put the correct answer at (§6, randomised). */
  targetLetter?: Letter;
}

export type QuestionerOutcome =
  | { kind: 'question'; question: SpellQuestion }
  /** r_que = badFormatPenalty. */
  | { kind: 'bad_format'; reason: string }
  /** Dropped without a questioner sample (unclosed thinking, over-long answer, zero answer, long prompt). */
  | { kind: 'discarded'; reason: string };

export interface SpellProposal extends Unit {
  docIndex: number;
  messages: ChatMessage[];
  completion: string;
  /** The questioner's sampled ids, when the engine returned them. */
  sampled?: SampledTokens;
  outcome: QuestionerOutcome;
  /** The responder's answer without documents (§1.5); absent when the filter is off or there is no question. */
  grounding?: { completion: string; answer: string | null; passed: boolean };
}

export type SpellStatus = 'valid' | 'bad_format' | 'bad_ground' | 'discarded';

export interface SpellGated extends Unit {
  docIndex: number;
  task: SpellTask;
  status: SpellStatus;
  reason?: string;
  /** Present when valid: the question and the responder prompt over the whole cluster. */
  question?: SpellQuestion;
  responderMessages?: ChatMessage[];
}

export interface SpellSolved extends Unit {
  docIndex: number;
  /** G responder samples; empty when the question did not pass the gate. */
  completions: string[];
  /** Their sampled ids (null where the engine returned none); absent when none had them. */
  sampled?: Array<SampledTokens | null>;
}

/** A verifier judgment: [[YES]] 1, [[NO]] 0, anything else −1 (§1.8). */
export type Vote = 1 | 0 | -1;

export interface JudgedResponse {
  /** The text after "the answer is"; null when the response has none. */
  answer: string | null;
  /** R_rule (§1.7). */
  rule: boolean;
  /** G judgments of (q, answer, reference); absent without a parseable answer or with the verifier off. */
  verifier?: {
    messages: ChatMessage[];
    completions: string[];
    votes: Vote[];
    sampled?: Array<SampledTokens | null>;
  };
}

export interface SpellJudged extends Unit {
  docIndex: number;
  responses: JudgedResponse[];
}
