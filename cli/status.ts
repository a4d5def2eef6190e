import {
  WorkflowFailedError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowExecutionDescription,
} from '@temporalio/client';
import { ITERATION, RECIPE, RUN_STATE } from '../workflows/search-attributes';
import { iterationChildId, iterationProgressQuery, progressQuery } from '../workflows/messages';
import type { selfPlayRun } from '../workflows/selfPlayRun';
import { renderStatus } from './progress-bars';
import type { PendingActivity, StatusSnapshot, UnansweredQuery } from './status-snapshot';

/** How long `status` waits for the run's query: a worker answers in milliseconds, a missing one never. */
export const QUERY_DEADLINE_MS = 10_000;

/**
 * A snapshot of a run: its `progress` query, then the running child's `iterationProgress`, and the activities
 * both wait on with their attempts and last failures (a transient failure is retried without a limit, so this
 * is where one that keeps failing shows). A closed run is
 * not queried (that would need a worker to replay it); its result or failure is read from history instead.
 * A query waits for a worker of the run's task queue, so with none it would wait forever: after `queryMs`
 * the snapshot says so, with what the run last recorded in its search attributes.
 */
export async function runStatus(
  client: Client,
  runId: string,
  queryMs = QUERY_DEADLINE_MS,
): Promise<StatusSnapshot> {
  const handle = client.workflow.getHandle<typeof selfPlayRun>(runId);
  const description = await handle.describe().catch((err: unknown) => {
    if (err instanceof WorkflowNotFoundError)
      throw new Error(
        `no workflow ${runId} in namespace ${client.options.namespace}; list runs with selfplay list`,
      );
    throw err;
  });
  const status = description.status.name;
  if (status !== 'RUNNING') {
    try {
      return { runId, status, outcome: await handle.result() };
    } catch (err) {
      const cause = err instanceof WorkflowFailedError ? (err.cause?.message ?? err.message) : String(err);
      return { runId, status, failure: cause };
    }
  }
  const progress = await answerWithin(client, queryMs, () => handle.query(progressQuery));
  if (!progress) {
    const attributes = description.typedSearchAttributes;
    const unanswered: UnansweredQuery = {
      taskQueue: description.taskQueue,
      waitedMs: queryMs,
      recipe: attributes.get(RECIPE),
      iteration: attributes.get(ITERATION),
      state: attributes.get(RUN_STATE),
    };
    return { runId, status, unanswered };
  }
  const runPending = pendingOf(description);
  if (!progress.iterationInFlight) return { runId, status, progress, ...withPending(runPending) };
  // The child may finish between the two queries: then there is no iteration to show.
  const child = client.workflow.getHandle(iterationChildId(progress.lineage, progress.iteration));
  const [iteration, childDescription] = await Promise.all([
    answerWithin(client, queryMs, () => child.query(iterationProgressQuery)).catch(() => undefined),
    child.describe().catch(() => undefined),
  ]);
  const pending = [...runPending, ...(childDescription ? pendingOf(childDescription) : [])];
  return { runId, status, progress, ...(iteration ? { iteration } : {}), ...withPending(pending) };
}

/** The activities a workflow waits on, as its description lists them. */
function pendingOf(description: WorkflowExecutionDescription): PendingActivity[] {
  return (description.raw.pendingActivities ?? []).map((a) => ({
    workflowId: description.workflowId,
    activity: a.activityType?.name ?? a.activityId ?? 'activity',
    attempt: a.attempt ?? 1,
    ...(a.lastFailure?.message ? { lastFailure: a.lastFailure.message } : {}),
  }));
}

const withPending = (pending: PendingActivity[]): { pending?: PendingActivity[] } =>
  pending.length ? { pending } : {};

/** Where `watchStatus` draws: a terminal (redrawn in place) or anything else (one snapshot). */
export interface StatusOutput {
  write(text: string): void;
  isTTY: boolean;
  columns: number;
}

/** This process's stdout; redrawn only with `--watch` on a terminal. */
export const terminal = (watch: boolean): StatusOutput => ({
  write: (text) => process.stdout.write(text),
  isTTY: watch && process.stdout.isTTY === true,
  columns: process.stdout.columns || 100,
});

/**
 * `selfplay status RUN --watch`: on a terminal, redraws the status in place every `everyMs` until the run
 * closes or `signal` aborts (Ctrl-C); elsewhere prints one snapshot, since redraw codes would garble a log.
 */
export async function watchStatus(
  fetch: () => Promise<StatusSnapshot>,
  out: StatusOutput,
  signal: AbortSignal,
  everyMs = 1000,
): Promise<void> {
  let drawn = 0;
  for (;;) {
    const snapshot = await fetch();
    const text = renderStatus(snapshot, out.columns);
    // Back to the first line of the previous drawing, then clear to the end of the screen.
    out.write(`${drawn > 0 ? `\x1b[${drawn}F\x1b[0J` : ''}${text}\n`);
    drawn = text.split('\n').length;
    if (!out.isTTY || snapshot.status !== 'RUNNING' || signal.aborted) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, everyMs);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
    if (signal.aborted) return;
  }
}

/**
 * The query's answer, or undefined when none came within `ms` (the query is then cancelled). Decided by this
 * timer rather than by the gRPC status of the expired call, which is DEADLINE_EXCEEDED or CANCELLED depending
 * on whether the client was waiting to retry it.
 */
async function answerWithin<T>(client: Client, ms: number, query: () => Promise<T>): Promise<T | undefined> {
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => {
      abort.abort();
      resolve(undefined);
    }, ms);
  });
  const answer = client.withAbortSignal(abort.signal, query);
  try {
    return await Promise.race([answer, expired]);
  } finally {
    clearTimeout(timer);
    // After the timer, the cancelled query's rejection is expected; before it, race has passed it on.
    answer.catch(() => undefined);
  }
}
