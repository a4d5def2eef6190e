import type { Client } from '@temporalio/client';
import { delay } from '../../activities/lib/backoff';
import { renderStatus } from '../../cli/progress-bars';
import { runStatus } from '../../cli/status';
import { sendControl } from '../../cli/controls';
import { progressQuery, type IterationFailure } from '../../workflows/messages';
import type { FaultKind } from './faults';

/**
 * What the faults that no retry heals (a corrupted object, a full disk) share: the run must wait for its
 * operator with the fault as its cause, `selfplay status` must say so, and once the operator has repaired it,
 * `selfplay retry` runs the iteration again.
 */

/** What such a fault did, and what the run did about it. */
export interface OperatorWaitRecord {
  kind: FaultKind;
  /** What was hit: the corrupted object's key (under the suite's storage prefix), the filled filesystem. */
  key: string;
  /** From the fault taking effect to the run waiting for its operator; undefined if not within the bound. */
  waitedS: number | undefined;
  /** The failure the waiting run showed. */
  cause: IterationFailure | undefined;
  /** The line of `selfplay status` that names the cause (`needs operator: ...`), as the operator reads it. */
  status: string | undefined;
  /** When the run did not wait within the bound: what the last look at it saw (its state, or why none). */
  lastSeen?: string;
  /** The operator's retries sent until the iteration went on (a full disk: disk.ts); one when absent. */
  retries?: number;
}

/**
 * Waits for the run to wait for its operator (within `boundMs` of now), then records what it and status show.
 * When it does not, the record says what the last look saw, and the run is still returned: the operator's
 * retry then either heals a wait the looks missed or is refused, where the suite would otherwise stall on a
 * run that no one retries.
 */
export async function awaitOperatorWait(
  client: Client,
  fault: { kind: FaultKind; key: string; runId: () => string | undefined },
  boundMs: number,
): Promise<OperatorWaitRecord & { runId: string | undefined }> {
  const since = Date.now();
  let lastSeen = 'no run in flight';
  while (Date.now() - since < boundMs) {
    const runId = fault.runId();
    const progress = runId
      ? await client.workflow
          .getHandle(runId)
          .query(progressQuery)
          .catch((err: unknown) => {
            lastSeen = `${runId}: query failed (${err instanceof Error ? err.message : String(err)})`;
            return undefined;
          })
      : undefined;
    if (runId && progress) lastSeen = `${runId}: ${progress.state}`;
    if (runId && progress?.state === 'needsOperator') {
      const shown = renderStatus(await runStatus(client, runId), 10_000);
      return {
        kind: fault.kind,
        key: fault.key,
        waitedS: (Date.now() - since) / 1000,
        cause: progress.failure,
        status: shown.split('\n').find((line) => line.startsWith('needs operator: ')),
        runId,
      };
    }
    await delay(250);
  }
  return {
    kind: fault.kind,
    key: fault.key,
    waitedS: undefined,
    cause: undefined,
    status: undefined,
    lastSeen,
    runId: fault.runId(),
  };
}

/** The operator's `selfplay retry RUN`, once the cause is repaired: the same code path as the CLI's. */
export async function retryAsOperator(
  client: Client,
  runId: string | undefined,
  kind: FaultKind,
  log: (line: string) => void,
): Promise<void> {
  if (!runId) return;
  await sendControl(client, runId, 'retry').catch((err: unknown) =>
    log(`${kind}: retry of ${runId} refused: ${String(err)}`),
  );
}

/** `KIND KEY: waited for its operator after S s, cause TYPE`, or that it did not within the bound. */
export function operatorWaitLine(record: OperatorWaitRecord, boundMs: number): string {
  return (
    `${record.kind} ${record.key}: ` +
    (record.waitedS === undefined
      ? `no operator wait within ${boundMs / 1000} s (last seen: ${record.lastSeen ?? 'nothing'})`
      : `waited for its operator after ${record.waitedS.toFixed(1)} s, cause ${record.cause?.type}`) +
    ((record.retries ?? 1) > 1 ? `, retried ${record.retries} times` : '')
  );
}
