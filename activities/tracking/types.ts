import type { RunConfig } from '../../config/schema';
import type { LineageOrigin } from '../../contracts/lineage';
import type { TrackedPoint } from './points';

/** The tracker run a lineage logs to: one per lineage, found again by its lineage id on every call. */
export interface TrackedRun {
  /** The run: W&B's group, an MLflow tag. */
  runId: string;
  /** The lineage whose commits this tracker run holds (the run id until a rollback). */
  lineage: string;
  /** Where the lineage branches from: a rollback's or a fork's commit; none for a fresh run. */
  parent?: LineageOrigin;
  /** Logged as the tracker run's parameters. */
  config: RunConfig;
}

export type TrackerName = keyof NonNullable<RunConfig['tracking']>;

/**
 * One experiment tracker. `log` reads from the tracker what its run already holds and logs only the later
 * points, in step order, so a retried or repeated call never logs a step twice.
 */
export interface Tracker {
  readonly name: TrackerName;
  log(run: TrackedRun, points: readonly TrackedPoint[]): Promise<void>;
}
