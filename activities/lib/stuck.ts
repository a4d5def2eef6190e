import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { Context } from '@temporalio/activity';
import type { ActivityInterceptors } from '@temporalio/worker';
import { TIMEOUT_DEFAULTS } from '../../config/schema';
import { STUCK_ACTIVITY } from '../../contracts/errors';
import { classifyFailure, isNonRetryable } from './errors';
import { progressNow } from './heartbeat';

/**
 * Transient failures are retried without an attempt limit (workflows/activity-options.ts), right for an outage
 * but not for a failure that never clears: the run would show "running" forever. So an activity counts how long
 * it has failed without progress, across its attempts, and once that passes `timeouts.stuckAfterMinutes` it
 * fails non-retryably (`StuckActivity`, naming the last failure): its iteration fails and the run waits for its
 * operator with that cause (`selfplay status` shows it, `selfplay retry` runs the iteration again).
 *
 * Progress is what the activity reports in its heartbeat (units stored, rows trained: activities/lib/
 * heartbeat.ts): an attempt that fails reporting what the attempt before it reported at its failure made none,
 * and the streak goes on; one that got elsewhere starts it again. A failed attempt hands the streak to the next
 * in its last heartbeat, which Temporal gives the next attempt (`info.heartbeatDetails`).
 */

/** A streak of attempts that failed without progress: since when, and how many. */
export interface FailingStreak {
  since: number;
  attempts: number;
}

/** The heartbeat a failed attempt leaves: the progress it failed at and the streak so far. */
export interface FailedBeat {
  progress: unknown;
  failing: FailingStreak;
}

/** The streak after an attempt failed at `progress` at `now`, given the previous attempt's last heartbeat. */
export function nextStreak(previousBeat: unknown, progress: unknown, now: number): FailingStreak {
  const before = previousBeat as Partial<FailedBeat> | undefined;
  const streak = before?.failing;
  if (streak && typeof streak.since === 'number' && sameProgress(before.progress, progress)) {
    return { since: streak.since, attempts: streak.attempts + 1 };
  }
  return { since: now, attempts: 1 };
}

const sameProgress = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** The `StuckActivity` failure once `streak` has lasted `limitMs`, naming `activity` and the last failure `err`. */
export function stuckFailure(
  activity: string,
  streak: FailingStreak,
  limitMs: number,
  now: number,
  err: unknown,
): ApplicationFailure | undefined {
  const failingMs = now - streak.since;
  if (failingMs < limitMs) return undefined;
  const last =
    err instanceof Error ? `${err.name === 'Error' ? '' : `${err.name}: `}${err.message}` : String(err);
  return ApplicationFailure.create({
    type: STUCK_ACTIVITY,
    nonRetryable: true,
    message:
      `${activity} has failed for ${minutes(failingMs)} without progress, ${streak.attempts} attempts ` +
      `(timeouts.stuckAfterMinutes ${minutes(limitMs)}); last failure: ${last}`,
    details: [{ activity, attempts: streak.attempts, failingSinceMs: streak.since, lastFailure: last }],
  });
}

const minutes = (ms: number): string => `${Number((ms / 60_000).toFixed(2))} min`;

/** The limit the activity's run config sets: every stage's input carries its config; the default otherwise. */
export function stuckAfterMs(args: readonly unknown[]): number {
  const config = (args[0] as { config?: { timeouts?: { stuckAfterMinutes?: unknown } } } | undefined)?.config;
  const minutes = config?.timeouts?.stuckAfterMinutes;
  return (typeof minutes === 'number' ? minutes : TIMEOUT_DEFAULTS.stuckAfterMinutes) * 60_000;
}

/**
 * Every activity's failure passes here (a worker interceptor, workers/pools.ts): classified
 * (`classifyFailure`: corrupt data and programming errors become non-retryable), and a transient one counted
 * into its streak, which it either hands to the next attempt or, past the limit, turns into `StuckActivity`.
 */
export const failureEdge = (ctx: Context): ActivityInterceptors => ({
  inbound: {
    async execute(input, next) {
      try {
        return await next(input);
      } catch (err) {
        const failure = classifyFailure(err);
        if (isNonRetryable(failure) || failure instanceof CancelledFailure || ctx.cancellationSignal.aborted)
          throw failure;
        const now = Date.now();
        const progress = progressNow(ctx);
        const streak = nextStreak(ctx.info.heartbeatDetails, progress, now);
        const stuck = stuckFailure(ctx.info.activityType, streak, stuckAfterMs(input.args), now, failure);
        if (stuck) throw stuck;
        // Sent with the failure (Temporal flushes the last beat), so the next attempt reads it.
        if (ctx.info.heartbeatTimeoutMs) ctx.heartbeat({ progress, failing: streak } satisfies FailedBeat);
        throw failure;
      }
    },
  },
});
