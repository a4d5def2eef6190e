import { CancellationScope, getExternalWorkflowHandle } from '@temporalio/workflow';
import { versionsOf, type IterationResult, type PolicySet } from '../contracts/selfplay';
import { iterationPausedSignal } from './messages';

/**
 * Bounded staleness (`pipeline.maxStaleness` k): the run keeps up to k+1 iterations in flight. Iteration
 * n+1 starts once iteration n's rollouts are done (so one iteration samples at a time, and weight sync at an
 * iteration's start never changes weights under another's requests) and only while n+1 − 1 − lastCommitted
 * ≤ k, so the commit it trains from is at most k iterations (and so k versions) newer than the one it sampled
 * with. Iterations commit in order: the run waits for each in turn and sends the next one its base.
 * Streaming (`pipeline.streaming`): n+1 may start once n has planned its first round (`issued`), its
 * requests waiting for the client's completions behind n's (by iteration, so n+1 fills what n's tail leaves
 * free), while the engine can serve the versions of every iteration then sampling at once; the staleness
 * bound is the same.
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
  /** Streaming: its first round is planned (the child said so), with the policies it samples. */
  issued?: PolicySet;
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
  /**
   * `pipeline.streaming`: the versions the next iteration would sample, and how many versions the engine
   * serves at once without loading weights under a request.
   */
  streaming?: { versions: Record<string, number>; versionsAtOnce: number };
}

/** The newest flight when the next iteration may start beside it, else undefined. */
export function nextOverlap(flights: Map<number, Flight>, bounds: OverlapBounds): Flight | undefined {
  if (bounds.maxStaleness === 0 || flights.size === 0) return undefined;
  const newest = flights.get(Math.max(...flights.keys())) as Flight;
  const next = newest.n + 1;
  const failed = newest.outcome !== undefined && 'err' in newest.outcome;
  const ready =
    newest.sampled !== undefined || (newest.issued !== undefined && streamsBeside(flights, bounds));
  if (!ready || failed || next > bounds.iterations) return undefined;
  if (flights.size >= bounds.untilContinueAsNew) return undefined;
  return next - 1 - bounds.lastCommitted <= bounds.maxStaleness ? newest : undefined;
}

/**
 * Whether the next iteration may sample beside every iteration still sampling: the distinct versions they
 * and it sample must fit what the engine serves at once (one for an engine that replaces its weights).
 */
function streamsBeside(flights: Map<number, Flight>, bounds: OverlapBounds): boolean {
  if (!bounds.streaming) return false;
  const sampling = running(flights).filter((f) => f.sampled === undefined);
  if (sampling.some((f) => f.issued === undefined)) return false;
  const versions = [bounds.streaming.versions, ...sampling.map((f) => versionsOf(f.issued as PolicySet))];
  return new Set(versions.map(versionKey)).size <= bounds.streaming.versionsAtOnce;
}

const versionKey = (versions: Record<string, number>): string =>
  JSON.stringify(Object.entries(versions).sort(([a], [b]) => a.localeCompare(b)));

/** The policies an iteration samples with, once it has said: when done or (streaming) all requests are sent. */
export const behaviourOf = (flight: Flight): PolicySet | undefined => flight.sampled ?? flight.issued;

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
