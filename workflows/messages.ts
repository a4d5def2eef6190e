import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { BaseCommit, IterationSummary, PolicySet, StageName } from '../contracts/selfplay';
import type { PathSegment } from '../contracts/lineage';

/**
 * The run's state as the parent sees it (also the `SelfPlayState` search attribute). `needsOperator`: an
 * iteration failed with an error no retry fixes (see `IterationFailure`); the run waits, open, for
 * `retryIteration` (or a rollback or stop) instead of failing.
 */
export type RunState =
  'starting' | 'running' | 'paused' | 'stopping' | 'rollingBack' | 'needsOperator' | 'completed';

/** The iteration a `needsOperator` run waits on, and why it failed (the root cause, as the activity said). */
export interface IterationFailure {
  iteration: number;
  /** The failure's type, e.g. `InvalidConfig`, `UnknownModel` (activities/lib/errors.ts). */
  type: string;
  message: string;
}

/** The parameters `setParams` may change while a run is going; each applies from the next iteration. */
export interface RunParams {
  /** `training.optimizer.learningRate` */
  learningRate?: number;
  /** `sampling.temperature` */
  temperature?: number;
  /** G: `groupSize` */
  groupSize?: number;
  /** B: `batchSize` */
  batchSize?: number;
}

export const RUN_PARAM_KEYS = ['learningRate', 'temperature', 'groupSize', 'batchSize'] as const;

/** What `selfPlayRun` answers to the `progress` query (the CLI's status and the UI's Queries tab). */
export interface RunProgress {
  runId: string;
  recipe: string;
  state: RunState;
  /** The iteration in flight, or the last one when the run is complete or paused between iterations. */
  iteration: number;
  iterations: number;
  lastCommitted: number;
  /** Each trained policy's committed version. */
  versions: Record<string, number>;
  /** A pause was accepted: the iteration in flight holds at its next stage boundary and no new one starts. */
  paused: boolean;
  /** `stopAfterIteration` was accepted: the run completes once the iteration in flight has committed. */
  stopRequested: boolean;
  /** The failed iteration the run waits on (state `needsOperator`) until `retryIteration`. */
  failure?: IterationFailure;
  /** Whether an iteration child is running (it may be holding at a stage boundary while paused). */
  iterationInFlight: boolean;
  /** The settable parameters as the next iteration will use them. */
  params: Required<RunParams>;
  resumedFrom?: { runId: string; iteration: number };
  /** The storage id the run writes under: the run id, or `{runId}.r{n}` after its n-th rollback. */
  lineage: string;
  /** The kept iterations, lineage by lineage (contracts/lineage.ts), once the run has rolled back. */
  lineagePath?: PathSegment[];
  recent: Array<{ iteration: number } & IterationSummary>;
}

/** `rollback` input: the committed iteration to return to; the run goes on with `iteration + 1`. */
export interface RollbackRequest {
  iteration: number;
}

/** `fork` input: a new run `id` that starts after this run's committed `iteration`. */
export interface ForkRequest {
  id: string;
  iteration: number;
}

export interface ForkResult {
  workflowId: string;
  /** Where the new run starts: the lineage holding the iteration, and the iteration. */
  resumeFrom: { runId: string; iteration: number };
}

export const progressQuery = defineQuery<RunProgress>('progress');

/** The workflow id of a run's iteration child: the parent starts it under this id, clients query it there. */
export const iterationChildId = (runId: string, iteration: number): string =>
  `${runId}/iter-${String(iteration).padStart(6, '0')}`;

/**
 * Operator controls on `selfPlayRun`, as Updates with validators: a rejected update changes nothing and its
 * failure says why; an accepted one returns the run's progress. Send them from the Web UI, the Temporal CLI
 * (`temporal workflow update execute --workflow-id RUN --name pause`) or any client.
 */
export const pauseUpdate = defineUpdate<RunProgress, []>('pause');
export const resumeUpdate = defineUpdate<RunProgress, []>('resume');
export const stopAfterIterationUpdate = defineUpdate<RunProgress, []>('stopAfterIteration');
export const setParamsUpdate = defineUpdate<RunProgress, [RunParams]>('setParams');
export const rollbackUpdate = defineUpdate<RunProgress, [RollbackRequest]>('rollback');
export const forkUpdate = defineUpdate<ForkResult, [ForkRequest]>('fork');
export const retryIterationUpdate = defineUpdate<RunProgress, []>('retryIteration');

export const CONTROL_DESCRIPTIONS = {
  pause:
    'Pause the run: the iteration in flight holds at its next stage boundary and no new iteration starts. ' +
    'Rejected when the run is already paused or complete.',
  resume: 'Resume a paused run. Rejected when the run is not paused.',
  stopAfterIteration:
    'Finish the iteration in flight, commit it, then complete the run normally. ' +
    'Rejected when a stop is already requested or the run is complete.',
  setParams:
    'Change safe parameters from the next iteration on: {"learningRate", "temperature", "groupSize", ' +
    '"batchSize"}. Validated with the config schema; a rejection names the field.',
  rollback:
    'Roll back to a committed iteration {"iteration": k}: the iteration in flight is cancelled, weights, optimizer ' +
    'and recipe state are restored to those committed at k, and the run goes on with k+1 in a new storage ' +
    'lineage. Rejected when k is not committed on the run, is before its first commit, a rollback is in ' +
    'progress, checkpoints are off or the run is complete.',
  fork:
    'Start a new run {"id": NEW, "iteration": k} from committed iteration k with this run\'s config (parameters ' +
    'as set now); this run is untouched. Rejected when k is not a kept commit, or the new id is invalid, is ' +
    "this run's, is taken by a workflow or already has commits.",
  retryIteration:
    'Run the failed iteration again (the run is needsOperator), once its cause is fixed: stages reuse what ' +
    'it stored. Rejected when no iteration is waiting to be retried.',
  progress: 'The run: state, iteration in flight, last commit, pause/stop flags, parameters, recent metrics.',
  iterationProgress:
    'The iteration: its latest stage, shards started/finished per stage out of the plan, and whether it is ' +
    'held at a stage boundary by a pause.',
} as const;

/** The parent forwards pause (true) and resume (false) to its running iteration child. */
export const iterationPausedSignal = defineSignal<[boolean]>('iterationPaused');

/**
 * With `pipeline.maxStaleness` ≥ 1, an iteration child tells its parent that its rollouts are done (every
 * shard judged): the parent may start the next iteration, which samples with `policies` (the versions and
 * snapshots this one sampled with) unless a newer commit has come since.
 */
export const iterationSampledSignal = defineSignal<[{ id: string; policies: PolicySet }]>('iterationSampled');

/**
 * With `pipeline.streaming`, an iteration child tells its parent that every request of its rollouts is sent
 * (each shard of its first round has passed its gate): the parent may start the next iteration, whose requests
 * queue behind this one's tail, within the same bounds (workflows/pipeline.ts).
 */
export const iterationIssuedSignal = defineSignal<[{ id: string; policies: PolicySet }]>('iterationIssued');

/** The parent sends an overlapping iteration (`IterationInput.overlaps`) the commit it trains from. */
export const baseCommittedSignal = defineSignal<[BaseCommit]>('baseCommitted');

/** How many calls of one stage have started and finished (per shard for propose, gate, solve, judge). */
export interface StageCount {
  started: number;
  finished: number;
}

/** What a `selfPlayIteration` child answers to the `iterationProgress` query. */
export interface IterationProgress {
  iteration: number;
  paused: boolean;
  /** Paused, no stage in flight and stages waiting at their boundary: nothing moves until resumed. */
  held: boolean;
  /** The stage most recently started. */
  stage?: StageName;
  stagesInFlight: number;
  /** Stages that have started at least once, with their counts (the CLI's progress bars). */
  stages: Partial<Record<StageName, StageCount>>;
  /** The plan's shard count once the plan is made: the total for each per-shard stage. */
  shards?: number;
}

export const iterationProgressQuery = defineQuery<IterationProgress>('iterationProgress');
