import type { Client } from '@temporalio/client';
import { versionsText } from '../contracts/selfplay';
import { progressQuery, type IterationFailure, type RunProgress } from '../workflows/messages';
import type { RunOutcome, selfPlayRun } from '../workflows/selfPlayRun';

/**
 * Follows a run until it ends, printing each commit after iteration `after` (held-out accuracy, valid tasks,
 * rewards) and, once, each failure it waits on for its operator: `start --wait` for a new run, `follow` for a
 * running one (a local run resumed after a crash), so both print the same lines. Polls the run's progress every
 * `everyMs`; a query that finds no worker yet is simply asked again.
 */
export async function followRun(
  client: Client,
  runId: string,
  { after = 0, print = console.log, everyMs = 1000 }: FollowOptions = {},
): Promise<RunOutcome> {
  const handle = client.workflow.getHandle<typeof selfPlayRun>(runId);
  let shown = after;
  let failureShown: IterationFailure | undefined;
  const result = handle.result();
  let done = false;
  void result.finally(() => (done = true)).catch(() => undefined);
  while (!done) {
    await Promise.race([result.catch(() => undefined), new Promise((r) => setTimeout(r, everyMs))]);
    const progress = await handle.query(progressQuery).catch(() => undefined);
    for (const it of progress?.recent ?? []) {
      if (it.iteration <= shown) continue;
      shown = it.iteration;
      for (const line of commitLines(it)) print(line);
    }
    if (!progress) continue;
    const { failure } = progress;
    if (failure && !sameFailure(failure, failureShown)) print(operatorLine(runId, failure));
    failureShown = failure;
  }
  const outcome = await result;
  print(
    `run ${runId} completed: ${outcome.lastCommitted} iterations committed, ${versionsText(outcome.versions)}`,
  );
  return outcome;
}

export interface FollowOptions {
  /** The last iteration already shown (0: none). */
  after?: number;
  print?: (line: string) => void;
  everyMs?: number;
}

function commitLines(it: RunProgress['recent'][number]): string[] {
  const rewards = Object.entries(it.meanRewardByRole)
    .map(([role, r]) => `${role} ${r.toFixed(3)}`)
    .join(', ');
  const start = Object.entries(it.startAccuracy ?? {}).map(
    ([name, accuracy]) => `held-out ${name} at the start: ${percent(accuracy)}`,
  );
  const heldOut = Object.entries(it.heldOutAccuracy ?? {})
    .map(([name, accuracy]) => `held-out ${name} ${percent(accuracy)}, `)
    .join('');
  const skipped = it.skippedContextLength
    ? `, ${it.skippedContextLength} unit(s) skipped (a prompt over the model's context)`
    : '';
  return [
    ...start,
    `iteration ${it.iteration} committed: ${heldOut}valid tasks ${percent(it.validTaskRate)}, mean reward ${rewards}, ${it.rows} training rows${skipped}, ${it.seconds.toFixed(1)} s`,
  ];
}

/** What a `needsOperator` run waits on, and the command that runs the iteration again once it is fixed. */
const operatorLine = (runId: string, f: IterationFailure): string =>
  `run ${runId} waits for its operator: iteration ${f.iteration} failed (${f.type}): ${f.message}\n` +
  `  once the cause is fixed: npx selfplay retry ${runId}`;

const sameFailure = (a: IterationFailure, b: IterationFailure | undefined): boolean =>
  b !== undefined && a.iteration === b.iteration && a.type === b.type && a.message === b.message;

const percent = (share: number): string => `${(100 * share).toFixed(1)}%`;
