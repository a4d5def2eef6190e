/**
 * The storage layout. Every artifact has a deterministic key, so a retried activity finds what an earlier
 * attempt wrote:
 *
 *   runs/{runId}/latest.json                                  pointer to the newest committed iteration
 *   runs/{runId}/iter-000042/manifest.json                    the commit: an iteration without one did not happen
 *   runs/{runId}/iter-000042/{stage}/shard-0003.jsonl.gz      a stage's output for one shard
 *   runs/{runId}/iter-000042/{stage}/shard-0003/unit-0017.json.gz   a finished unit inside a running shard
 *   runs/{runId}/iter-000042/{stage}/shard-0003/unit-0017/traj-02.json.gz   a multi-turn trajectory's finished turns, inside a running unit
 *   runs/{runId}/iter-000042/update/batch-{policy}.jsonl.gz   the training batch
 *   runs/{runId}/checkpoints/{policy}/v000042/                 the kernel's state after version 42
 *   runs/{runId}/snapshots/{policy}/v000042/                   the sampler snapshot of version 42
 */
const pad = (n: number, width: number): string => String(n).padStart(width, '0');

export function runPrefix(runId: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._\-/]*$/.test(runId) || runId.includes('..')) {
    throw new Error(`run id ${JSON.stringify(runId)} is not usable as a storage prefix`);
  }
  return `runs/${runId}`;
}

export const latestKey = (runId: string): string => `${runPrefix(runId)}/latest.json`;

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

/** `name` tells a unit's trajectories apart (e.g. `02`, `solver-3`): letters, digits, `.`, `_` and `-`. */
export function trajectoryKey(
  runId: string,
  iteration: number,
  stage: string,
  shard: number,
  unit: number,
  name: string,
): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) {
    throw new Error(`trajectory name ${JSON.stringify(name)} is not usable in a storage key`);
  }
  return `${unitKey(runId, iteration, stage, shard, unit).replace(/\.json\.gz$/, '')}/traj-${name}.json.gz`;
}

export const batchKey = (runId: string, iteration: number, policy: string): string =>
  `${iterationPrefix(runId, iteration)}/update/batch-${policy}.jsonl.gz`;

export const metricsKey = (runId: string, iteration: number): string =>
  `${iterationPrefix(runId, iteration)}/metrics.json`;

export const checkpointPrefix = (runId: string, policy: string, version: number): string =>
  `${runPrefix(runId)}/checkpoints/${policy}/v${pad(version, 6)}`;

export const snapshotPrefix = (runId: string, policy: string, version: number): string =>
  `${runPrefix(runId)}/snapshots/${policy}/v${pad(version, 6)}`;
