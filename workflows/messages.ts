import { defineQuery } from '@temporalio/workflow';
import type { IterationSummary } from './contracts';

/** What `selfPlayRun` answers to the `progress` query (the CLI's status and the UI's Queries tab). */
export interface RunProgress {
  runId: string;
  recipe: string;
  state: 'starting' | 'running' | 'completed';
  /** The iteration in flight, or the last one when the run is complete. */
  iteration: number;
  iterations: number;
  lastCommitted: number;
  policyVersion: number;
  resumedFrom?: { runId: string; iteration: number };
  recent: Array<{ iteration: number } & IterationSummary>;
}

export const progressQuery = defineQuery<RunProgress>('progress');
