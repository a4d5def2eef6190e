import { CancellationScope, getExternalWorkflowHandle } from '@temporalio/workflow';
import type { IterationResult, PolicySet } from '../contracts/selfplay';
import { iterationPausedSignal } from './messages';

/**
 * Bounded staleness (`pipeline.maxStaleness` k): the run keeps up to k+1 iterations in flight. Iteration
 * n+1 starts once iteration n's rollouts are done (so one iteration samples at a time, and weight sync at an
 * iteration's start never changes weights under another's requests) and only while n+1 − 1 − lastCommitted
 * ≤ k, so the commit it trains from is at most k iterations (and so k versions) newer than the one it sampled
 * with. Iterations commit in order: the run waits for each in turn and sends the next one its base.
 */

/** One iteration child in flight. */
export interface Flight {
  n: number;
  id: string;
  /** Cancelled by a rollback, or by a stop for iterations started beside the last commit. */
  scope: CancellationScope;
  /** The child has started (it can take signals). */
  childStarted: boolean;
  /** Its rollouts are done (the child said so), with the policies they sampled. */
  sampled?: PolicySet;
  /** Settles once the child has ended and `outcome` is set. */
  ended?: Promise<void>;
  outcome?: { result: IterationResult } | { err: unknown };
}

export interface OverlapBounds {
  maxStaleness: number;
  lastCommitted: number;
  iterations: number;
  /** Iterations the run may still commit before it continues as new. */
  untilContinueAsNew: number;
}

/** The newest flight when the next iteration may start beside it, else undefined. */
export function nextOverlap(flights: Map<number, Flight>, bounds: OverlapBounds): Flight | undefined {
  if (bounds.maxStaleness === 0 || flights.size === 0) return undefined;
  const newest = flights.get(Math.max(...flights.keys())) as Flight;
  const next = newest.n + 1;
  const failed = newest.outcome !== undefined && 'err' in newest.outcome;
  if (!newest.sampled || failed || next > bounds.iterations) return undefined;
  if (flights.size >= bounds.untilContinueAsNew) return undefined;
  return next - 1 - bounds.lastCommitted <= bounds.maxStaleness ? newest : undefined;
}

/** The flights whose child has not ended. */
export const running = (flights: Map<number, Flight>): Flight[] =>
  [...flights.values()].filter((f) => f.outcome === undefined);

/** Forwards pause (true) or resume to a child; one that has just finished has nothing left to pause. */
export const pauseChild = (id: string, paused: boolean): Promise<void> =>
  getExternalWorkflowHandle(id)
    .signal(iterationPausedSignal, paused)
    .catch(() => undefined);

/**
 * The committed policies with the snapshot the previous iteration sampled, where it sampled the same
 * version: a version-0 commit names no snapshot, the one published at the previous iteration's start.
 */
export function withSnapshots(committed: PolicySet, sampled: PolicySet): PolicySet {
  return Object.fromEntries(
    Object.entries(committed).map(([policy, c]) => {
      const s = sampled[policy];
      const snapshot = !c.snapshot && s?.version === c.version ? s.snapshot : undefined;
      return [policy, snapshot ? { ...c, snapshot } : c];
    }),
  );
}
