import { Context } from '@temporalio/activity';
import type { ActivityInterceptors } from '@temporalio/worker';

/** What each running activity last said about its progress (`heartbeatWhile`), sent with every beat. */
const progressOf = new WeakMap<Context, () => unknown>();

/**
 * Every activity of every pool heartbeats on a clock (a third of its heartbeat timeout) while it runs: a
 * worker interceptor (workers/pools.ts) starts the clock, so no activity can forget to. A long call (a
 * training step, a filter over a large batch, a generation queued behind others) never looks like a dead
 * worker, while a worker that really died misses its beats and its activity is retried elsewhere after the
 * heartbeat timeout instead of after the attempt's whole start-to-close limit. The beats also carry
 * cancellation to the activity (a rollback, a closed workflow).
 */
export const heartbeatClock = (ctx: Context): ActivityInterceptors => ({
  inbound: {
    async execute(input, next) {
      const timeoutMs = ctx.info.heartbeatTimeoutMs;
      if (!timeoutMs) return next(input);
      const beat = setInterval(() => ctx.heartbeat(progressOf.get(ctx)?.()), Math.max(1_000, timeoutMs / 3));
      try {
        return await next(input);
      } finally {
        clearInterval(beat);
      }
    },
  },
});

/**
 * Runs `work` with `details` as the activity's reported progress: read at every beat of the clock above,
 * so it can change as the work goes on; Temporal throttles what reaches the server. The progress stays after
 * `work` ends: a failed attempt's is what tells the next one whether it got anywhere (activities/lib/stuck.ts).
 */
export async function heartbeatWhile<T>(
  details: () => unknown,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const ctx = Context.current();
  progressOf.set(ctx, details);
  return work(ctx.cancellationSignal);
}

/** What the activity of `ctx` last said about its progress (undefined: it says nothing). */
export const progressNow = (ctx: Context): unknown => progressOf.get(ctx)?.();
