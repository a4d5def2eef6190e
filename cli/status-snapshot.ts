import type { IterationProgress, RunProgress } from '../workflows/messages';
import type { RunOutcome } from '../workflows/selfPlayRun';

/** Everything `selfplay status` shows of a run at one moment. */
export interface StatusSnapshot {
  runId: string;
  /** Temporal's execution status: RUNNING, COMPLETED, FAILED, TERMINATED, ... */
  status: string;
  /** The run's `progress` query, while it runs. */
  progress?: RunProgress;
  /** The running iteration child's `iterationProgress` query (absent between iterations). */
  iteration?: IterationProgress;
  /** The result of a completed run, read from its history (no worker needed). */
  outcome?: RunOutcome;
  /** Why a closed run did not complete. */
  failure?: string;
  /** A running run whose `progress` query no worker answered in time: what visibility last recorded. */
  unanswered?: UnansweredQuery;
  /** The activities the run and its running iteration wait on (Temporal's describe), with their retries. */
  pending?: PendingActivity[];
}

/** An activity scheduled and not yet completed: which attempt it is on and why the one before failed. */
export interface PendingActivity {
  /** The workflow that scheduled it: the run, or its iteration child `{run}/iter-{n}`. */
  workflowId: string;
  activity: string;
  attempt: number;
  lastFailure?: string;
}

/** A running run nobody answers for: its orchestrator task queue has no live worker (or one that is stuck). */
export interface UnansweredQuery {
  taskQueue: string;
  waitedMs: number;
  recipe?: string;
  iteration?: number;
  state?: string;
}
