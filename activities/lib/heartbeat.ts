import { asyncLocalStorage, Context } from '@temporalio/activity';
import type { ActivityInterceptors } from '@temporalio/worker';

/**
 * What each running activity says in its beats (`heartbeatWhile`): its progress, what a retry keeps (units
 * stored, the stage of an update it got past), which the stuck detection compares between attempts
 * (activities/lib/stuck.ts), and what it is doing now (rows the kernel has trained of the step in flight,
 * tokens sampled), which a retry starts again from nothing and so is shown, never compared.
 */
export interface Report {
  progress: () => unknown;
  live?: () => Record<string, unknown>;
}
const reports = new WeakMap<Context, Report>();

/** The beat of a report: its progress with the live fields beside it. */
function beatOf(report: Report | undefined): unknown {
  const progress = report?.progress();
  const live = report?.live?.();
  return live && typeof progress === 'object' && progress !== null ? { ...progress, ...live } : progress;
}

/** How often an activity with heartbeat timeout `timeoutMs` beats: a third of it, at most once a second. */
export const beatIntervalMs = (timeoutMs: number): number => Math.max(1_000, timeoutMs / 3);

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
      const beat = setInterval(() => ctx.heartbeat(beatOf(reports.get(ctx))), beatIntervalMs(timeoutMs));
      try {
        return await next(input);
      } finally {
        clearInterval(beat);
      }
    },
  },
});

/**
 * Runs `work` with `report` as what the activity reports: its progress (a function), or its progress and
 * what it does now (`{progress, live}`), read at every beat of the clock above, so both can change as the
 * work goes on; Temporal throttles what reaches the server. The report stays after `work` ends: a failed
 * attempt's progress is what tells the next one whether it got anywhere (activities/lib/stuck.ts).
 */
export async function heartbeatWhile<T>(
  report: (() => unknown) | Report,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const ctx = Context.current();
  reports.set(ctx, typeof report === 'function' ? { progress: report } : report);
  return work(ctx.cancellationSignal);
}

/** A beat now, off the clock (a unit finished): what the activity reports. */
export function beatNow(): void {
  const ctx = Context.current();
  ctx.heartbeat(beatOf(reports.get(ctx)));
}

/** What the activity of `ctx` last said about its progress (undefined: it says nothing). */
export const progressNow = (ctx: Context): unknown => reports.get(ctx)?.progress();

/** Completion tokens each running activity has sampled (`countCompletionTokens`), for its beats. */
const sampledTokens = new WeakMap<Context, number>();

/** Counts `tokens` sampled toward the current activity's; outside an activity (the CLI, a bench) nothing. */
export function countCompletionTokens(tokens: number): void {
  const ctx = asyncLocalStorage.getStore();
  if (ctx) sampledTokens.set(ctx, (sampledTokens.get(ctx) ?? 0) + tokens);
}

/** The completion tokens the current activity has sampled so far (this attempt's). */
export const completionTokensSampled = (): number => sampledTokens.get(Context.current()) ?? 0;
