import os from 'node:os';
import { ActivityNotFoundError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure, type TypedSearchAttributes } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { ITERATION, RUN_STATE } from '../../workflows/search-attributes';

/**
 * Which run `npm run local` runs. The dev server keeps its workflows in a file (temporal.sh), so a local run
 * killed with its stack is still open there, waiting for a worker; the next `npm run local` resumes it
 * instead of starting a second run beside it, which would wake it up on the same worker and kernel.
 */

/** The prefix of the runs `npm run local` starts (`local-{date}-{time}`, run-local.sh): the ones it resumes. */
const LOCAL_RUN_PREFIX = 'local-';

/** An open run: its workflow has not ended. */
export interface OpenRun {
  runId: string;
  /** The id its storage and train steps carry: the run id, or `{runId}.r{n}` once it has rolled back. */
  lineage: string;
  /** What it last recorded (`SelfPlayState`): running, paused, needsOperator, ... */
  state: string;
  lastCommitted: number;
}

/** What `npm run local` asked for: `--new`, `--resume RUN` (the run, read from Temporal), or neither. */
export interface LocalRunRequest {
  fresh?: boolean;
  named?: OpenRun;
}

export interface LocalRun {
  runId: string;
  /** The lineage the kernel is started for (`serve --run`): the run's, which its train steps carry. */
  lineage: string;
  /** Resume this open run; otherwise start it. */
  resume: boolean;
  /** The run waits for its operator after a failed iteration: run that iteration again once a worker is up. */
  retry: boolean;
  /** What `npm run local` is doing, in one line. */
  message: string;
}

/**
 * The run named, else with `--new` a new one, else the newest open local run, else a new one. Any other open
 * local run is named with the command that resumes it: it waits meanwhile (a kernel started for one run
 * refuses the others' weights, so an iteration of one that wakes up on this worker waits for its operator).
 */
export function chooseLocalRun(
  request: LocalRunRequest,
  open: readonly OpenRun[],
  newRunId: string,
): LocalRun {
  const picked = request.named ?? (request.fresh ? undefined : open[0]);
  const others = open.filter((r) => r.runId !== picked?.runId).map((r) => r.runId);
  const unfinished = others.length
    ? `; unfinished: ${others.join(', ')} (resume with --resume ${others[0]})`
    : '';
  if (!picked) {
    const message = `starting new run ${newRunId}${unfinished}`;
    return { runId: newRunId, lineage: newRunId, resume: false, retry: false, message };
  }
  const retry = picked.state === 'needsOperator';
  const how = retry
    ? ', retrying the iteration it waited on for its operator'
    : picked.state === 'paused'
      ? ` (paused: npx selfplay resume ${picked.runId} lets it go on)`
      : '';
  return {
    runId: picked.runId,
    lineage: picked.lineage,
    resume: true,
    retry,
    message: `resuming run ${picked.runId} from iteration ${picked.lastCommitted + 1}${how}${unfinished}`,
  };
}

/** The open local runs, newest first. */
export async function openLocalRuns(client: Client): Promise<OpenRun[]> {
  const query =
    `WorkflowType = 'selfPlayRun' AND ExecutionStatus = 'Running' AND ` +
    `WorkflowId STARTS_WITH '${LOCAL_RUN_PREFIX}'`;
  const runs: OpenRun[] = [];
  for await (const info of client.workflow.list({ query })) {
    runs.push(openRunOf(info.workflowId, info.typedSearchAttributes, info.memo));
  }
  return runs;
}

/** The run `--resume RUN` names, or an error that says why it cannot be resumed. */
export async function namedOpenRun(client: Client, runId: string): Promise<OpenRun> {
  const description = await client.workflow
    .getHandle(runId)
    .describe()
    .catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError)
        throw new Error(
          `--resume ${runId}: no such run on this Temporal server (npx selfplay list shows them)`,
        );
      throw err;
    });
  const status = description.status.name;
  if (status !== 'RUNNING')
    throw new Error(`--resume ${runId}: the run is ${status.toLowerCase()}, there is nothing to resume`);
  return openRunOf(runId, description.typedSearchAttributes, description.memo);
}

/** The run as its search attributes and memo (`storagePrefix: runs/{lineage}`, set by selfPlayRun) show it. */
function openRunOf(
  runId: string,
  attributes: TypedSearchAttributes,
  memo?: Record<string, unknown>,
): OpenRun {
  const prefix = typeof memo?.storagePrefix === 'string' ? memo.storagePrefix : '';
  return {
    runId,
    lineage: /^runs\/(.+)$/.exec(prefix)?.[1] ?? runId,
    state: attributes.get(RUN_STATE) ?? 'running',
    lastCommitted: attributes.get(ITERATION) ?? 0,
  };
}

const { PendingActivityState } = temporal.api.enums.v1;

/**
 * Fails, as retryable, the activities of `runId` (and of its iterations, its open children) that a worker of
 * this machine started and did not live to finish: Temporal would retry them only once their heartbeat timed
 * out (minutes), so a resumed run would sit idle that long. A worker names itself `{host}:{pid}/{pool}`
 * (workers/main.ts); a worker of another machine, or one still alive, is left alone.
 */
export async function releaseActivitiesOfGoneWorkers(client: Client, runId: string): Promise<void> {
  const { raw } = await client.workflow.getHandle(runId).describe();
  const execution = raw.workflowExecutionInfo?.execution;
  for (const activity of raw.pendingActivities ?? []) {
    const started =
      activity.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED ||
      activity.state === PendingActivityState.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED;
    const worker = activity.lastWorkerIdentity ?? '';
    if (!started || !activity.activityId || !goneLocalWorker(worker, processAlive)) continue;
    const id = { workflowId: runId, runId: execution?.runId ?? undefined, activityId: activity.activityId };
    const gone = ApplicationFailure.retryable(
      `worker ${worker} is gone; the run was resumed without it`,
      'WorkerGone',
    );
    // Not found: its heartbeat timed out meanwhile, and Temporal retries it already.
    await client.activity.fail(id, gone).catch((err: unknown) => {
      if (!(err instanceof ActivityNotFoundError)) throw err;
    });
  }
  for (const child of raw.pendingChildren ?? []) {
    if (child.workflowId) await releaseActivitiesOfGoneWorkers(client, child.workflowId);
  }
}

/** A worker identity `{host}:{pid}/{pool}` (workers/main.ts, pools.ts) of this machine whose process has ended. */
export function goneLocalWorker(identity: string, alive: (pid: number) => boolean): boolean {
  const match = /^(.*):(\d+)(?:\/[^/]*)?$/.exec(identity);
  return match?.[1] === os.hostname() && !alive(Number(match[2]));
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
