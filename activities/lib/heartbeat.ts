import { Context } from '@temporalio/activity';

/**
 * Runs `work` while heartbeating on a clock (a third of the activity's heartbeat timeout), so a long call
 * — a training step, a weight load, a generation queued behind others — never looks like a dead worker,
 * while a worker that really died misses its heartbeats. `details` is read at every beat, so it can report
 * progress; Temporal throttles what reaches the server.
 */
export async function heartbeatWhile<T>(
  details: () => unknown,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const ctx = Context.current();
  const beat = setInterval(
    () => ctx.heartbeat(details()),
    Math.max(1_000, (ctx.info.heartbeatTimeoutMs ?? 60_000) / 3),
  );
  try {
    return await work(ctx.cancellationSignal);
  } finally {
    clearInterval(beat);
  }
}
