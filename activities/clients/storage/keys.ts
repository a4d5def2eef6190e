/**
 * The storage layout. Every artifact has a deterministic key, so a retried activity finds what an earlier
 * attempt wrote:
 *
 *   runs/{runId}/latest.json                                  pointer to the newest committed iteration
 *   runs/{runId}/lineage.json                                 the run's lineages, once it has rolled back
 *                                                             (a lineage `{runId}.r1` is a run id of its own)
 *   runs/{runId}/iter-000042/manifest.json                    the commit: an iteration without one did not happen
 *   runs/{runId}/iter-000042/{stage}/shard-0003.jsonl.gz      a stage's output for one shard
 *   runs/{runId}/iter-000042/{stage}/shard-0003/unit-0017.json.gz   a finished unit inside a running shard
 *   runs/{runId}/iter-000042/{stage}/shard-0003/unit-0017/{part}.json.gz    a finished part of a running unit: a multi-turn
 *                                                                             trajectory's turns (traj-solver-3), a verification
 *   runs/{runId}/iter-000042/update/batch-{policy}.jsonl.gz   a policy's training batch
 *   runs/{runId}/iter-000042/update/filter.json              the filter's summary, written after the batches
 *   runs/{runId}/checkpoints/{policy}/v000042/                 the kernel's state after version 42
 *   runs/{runId}/snapshots/{policy}/v000042/                   the sampler snapshot of version 42
 *   runs/{runId}/forks/{otherRunId}.json                       another run started from one of this run's commits
 *                                                             (a fork or resume: retention keeps that commit)
 *   runs/{runId}/tracking/{tracker}.json                       the last iteration logged to an experiment tracker
 *   corpora/{id}/                                               a corpus's segment index, shared by every run
 *                                                               (activities/corpus/segment-index.ts)
 */
import { RUN_ID, RUN_ID_RULE } from '../../../config/schema';
import { runOfLineage } from '../../../contracts/lineage';
import { NON_RETRYABLE, nonRetryable } from '../../lib/errors';

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/**
 * `runs/{runId}` for a run id (config/schema.ts) or a rollback's lineage of one, `{runId}.r{n}`
 * (contracts/lineage.ts); nothing else, a `/` least of all: it would nest the run under another run's prefix.
 * An id refused here is refused on every attempt, so the failure is non-retryable.
 */
export function runPrefix(runId: string): string {
  if (!RUN_ID.test(runOfLineage(runId))) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `run id ${JSON.stringify(runId)} cannot name a storage prefix: a run id takes ${RUN_ID_RULE} (and a rollback's lineage adds .r{n})`,
    );
  }
  return `runs/${runId}`;
}

export const latestKey = (runId: string): string => `${runPrefix(runId)}/latest.json`;

/** The run's lineage record (contracts/lineage.ts); absent until its first rollback. */
export const lineageKey = (runId: string): string => `${runPrefix(runId)}/lineage.json`;

export const iterationPrefix = (runId: string, iteration: number): string =>
  `${runPrefix(runId)}/iter-${pad(iteration, 6)}`;

export const manifestKey = (runId: string, iteration: number): string =>
  `${iterationPrefix(runId, iteration)}/manifest.json`;

export const shardKey = (runId: string, iteration: number, stage: string, shard: number): string =>
  `${iterationPrefix(runId, iteration)}/${stage}/shard-${pad(shard, 4)}.jsonl.gz`;

export const unitKey = (
  runId: string,
  iteration: number,
  stage: string,
  shard: number,
  unit: number,
): string =>
  `${iterationPrefix(runId, iteration)}/${stage}/shard-${pad(shard, 4)}/unit-${pad(unit, 4)}.json.gz`;

/**
 * A finished part of an unfinished unit (a trajectory's turns, a verification), kept so a retried unit does not
 * ask for it again. `name` tells a unit's parts apart (e.g. `traj-solver-3`): letters, digits, `.`, `_`, `-`.
 */
export function unitPartKey(
  runId: string,
  iteration: number,
  stage: string,
  shard: number,
  unit: number,
  name: string,
): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) {
    throw new Error(`unit part name ${JSON.stringify(name)} is not usable in a storage key`);
  }
  return `${unitKey(runId, iteration, stage, shard, unit).replace(/\.json\.gz$/, '')}/${name}.json.gz`;
}

export const batchKey = (runId: string, iteration: number, policy: string): string =>
  `${iterationPrefix(runId, iteration)}/update/batch-${policy}.jsonl.gz`;

export const filterSummaryKey = (runId: string, iteration: number): string =>
  `${iterationPrefix(runId, iteration)}/update/filter.json`;

export const metricsKey = (runId: string, iteration: number): string =>
  `${iterationPrefix(runId, iteration)}/metrics.json`;

export const checkpointPrefix = (runId: string, policy: string, version: number): string =>
  `${runPrefix(runId)}/checkpoints/${policy}/v${pad(version, 6)}`;

export const snapshotPrefix = (runId: string, policy: string, version: number): string =>
  `${runPrefix(runId)}/snapshots/${policy}/v${pad(version, 6)}`;

/** Where the run's checkpoints and its snapshots live, every policy and version under them. */
export const weightPrefixes = (runId: string): string[] => [
  `${runPrefix(runId)}/checkpoints/`,
  `${runPrefix(runId)}/snapshots/`,
];

/** A checkpoint or snapshot: the prefix `checkpointPrefix` or `snapshotPrefix` gave, and what it named. */
export interface WeightVersion {
  prefix: string;
  runId: string;
  policy: string;
  version: number;
}

/** The checkpoint or snapshot a stored key belongs to, or undefined for any other key. */
export function weightVersionOf(key: string): WeightVersion | undefined {
  const match = /^(runs\/([^/]+)\/(?:checkpoints|snapshots)\/([^/]+)\/v(\d+))\/./.exec(key);
  if (!match) return undefined;
  const [, prefix = '', runId = '', policy = '', version = ''] = match;
  return { prefix, runId, policy, version: Number(version) };
}

/** The record of a run started after one of `runId`'s commits (activities/stages/lineage.ts). */
export const forkKey = (runId: string, forkRunId: string): string =>
  `${runPrefix(runId)}/forks/${forkRunId}.json`;

export const forksPrefix = (runId: string): string => `${runPrefix(runId)}/forks/`;

/** How far a tracker has logged the lineage (activities/tracking/track.ts): where its next call starts reading. */
export const trackingKey = (runId: string, tracker: string): string =>
  `${runPrefix(runId)}/tracking/${tracker}.json`;

export const corpusIndexPrefix = (id: string): string => `corpora/${id}`;
