import type { ChatMessage } from '../../clients/trainer-contract';
import type { Trajectory } from '../../tools/types';
import type { BinaryScore } from '../../judges/binary';
import type { ScopeTaskType } from '../../../config/presets/scope';
import type { PlanUnit, Unit } from '../types';

/**
 * SCOPE's records (docs/recipes/scope.md): the plan unit, one record per stage, all plain JSON. A unit is
 * one source document; its G Challenger rollouts are G candidate tasks, each gated, given rubrics, solved
 * G times and graded per rubric.
 */

export const CHALLENGER = 'challenger';
export const SOLVER = 'solver';
/** The frozen base model M0: its own endpoint (`inference.roles.judge` with `frozen: true`), never trained. */
export const JUDGE = 'judge';

/** One planned prompt (§1 stage 1, step 1): a source document d, a task type and a search budget. */
export interface ScopeUnit extends PlanUnit {
  segmentId: string;
  docId: string;
  /** d: the Challenger and the judge see it, the Solver never does. */
  text: string;
  taskType: ScopeTaskType;
  /** num_search_turns ∈ {1, 2, 3}: after this many searches the environment says "searches complete". */
  searchBudget: number;
}

/** The two quality gates (§1 step 4); each is the judge's 0/1 with its fallback, if any. */
export interface GateVerdicts {
  identifiability: BinaryScore;
  relevance: BinaryScore;
}

/** One Challenger rollout: its trajectory, format score, and what the judge made of its task. */
export interface Candidate {
  trajectory: Trajectory;
  /** r_fmt and its three parts (§2). */
  format: { think: number; tool: number; structure: number; score: number };
  /** The task's question (the `<question>` sub-element, or the whole `<task>` body); absent without one. */
  task?: string;
  /** Present when there is a task (which makes r_fmt > 0: its structure part is 1). */
  gates?: GateVerdicts;
  /** The judge's rubrics, present when both gates passed: the parsed list and the raw output. */
  rubrics?: { completion: string; items: string[] };
}

export interface ScopeProposal extends Unit {
  docIndex: number;
  messages: ChatMessage[];
  candidates: Candidate[];
}

/** Why a candidate is not solved: the reason for its Challenger reward as well. */
export type CandidateStatus =
  | 'valid'
  /** r_fmt = 0 (§1 step 3): reward 0, not gated. */
  | 'no_format'
  /** Some format, but no `<task>` in the final turn: nothing to gate. */
  | 'no_task'
  | 'gate_identifiability'
  | 'gate_relevance'
  /** Both gates passed but the judge wrote fewer than the minimum of well-formed rubrics (§2, [U]: dropped). */
  | 'rubrics_invalid';

export interface GatedCandidate {
  status: CandidateStatus;
  /** Present when valid: the question, the Solver's prompt and the rubrics it is graded against. */
  question?: string;
  solverMessages?: ChatMessage[];
  rubrics?: string[];
}

export interface ScopeGated extends Unit {
  docIndex: number;
  candidates: GatedCandidate[];
}

/** G Solver trajectories per valid candidate (empty for the others), aligned with the candidates. */
export interface ScopeSolved extends Unit {
  docIndex: number;
  candidates: Array<{ trajectories: Trajectory[] }>;
}

/** One Solver rollout as graded: its extracted answer and one judge score per rubric. */
export interface GradedRollout {
  /** The `<answer>` of the final turn; null without one (graded 0 without asking the judge). */
  answer: string | null;
  grades: BinaryScore[];
}

/** A task kept in a Solver step (stage 2): its G fresh rollouts, sampled after its selection, and their grades. */
export interface SolverTraining {
  trajectories: Trajectory[];
  rollouts: GradedRollout[];
}

export interface ScopeJudged extends Unit {
  docIndex: number;
  /** `rollouts`: the solve stage's rollouts graded; `training`: present for a task a Solver step keeps. */
  candidates: Array<{ rollouts: GradedRollout[]; training?: SolverTraining }>;
}
