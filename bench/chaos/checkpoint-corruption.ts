import { getJson } from '../../activities/clients/storage/codec';
import { checkpointPrefix, latestKey } from '../../activities/clients/storage/keys';
import { delay } from '../../activities/lib/backoff';
import type { LatestPointer } from '../../activities/stages/manifest';
import { CORRUPT_BYTES, type CorruptionContext } from './corruption';
import { awaitOperatorWait, retryAsOperator, type OperatorWaitRecord } from './operator';
import type { SupervisedWorker } from './stack';

/**
 * `corrupt-checkpoint`: the committed checkpoint that the next restore reads, corrupted, and the restore made
 * certain. A restore happens only when the kernel has lost its weights (a restart: the recording trainer's
 * `POST /admin/forget`, since its kill keeps its state file as a kernel keeps its checkpoints) and its version
 * is not the committed one, so with the trainer pool stopped (no update in flight, nothing restores before the
 * corruption) and the trainer at the committed version (no step applied but not committed) the suite
 * corrupts `state.json` of the current run's last committed checkpoint, makes the trainer forget, and starts the
 * pool again: its next `prepareTrainer` or `update` restores, the trainer answers 422 `corrupt_object`, the client
 * `CorruptData`, and the run waits for its operator. The operator restores the object (from a backup, here kept
 * in memory) and retries; the restore then succeeds and the step applies once. A run with no commit yet, or
 * none left to run, is skipped for the next.
 */
export async function corruptCheckpointAndRepair(
  context: CorruptionContext & { trainerUrl: string },
): Promise<OperatorWaitRecord> {
  const kind = 'corrupt-checkpoint';
  const { client, store, log } = context;
  const reader = context.readers[kind];
  for (;;) {
    if (Date.now() > context.deadline)
      throw new Error(`${kind}: no checkpoint to corrupt before the deadline`);
    const runId = context.currentRun();
    const version = runId
      ? await stopPoolAtCommit(reader, commitProbe(context, runId), context.deadline)
      : undefined;
    if (!runId || version === undefined) {
      await delay(250);
      continue;
    }
    const key = `${checkpointPrefix(runId, runId, version)}/state.json`;
    const original = await store.get(key);
    if (!original) throw new Error(`${kind}: the committed checkpoint ${key} is not in storage`);
    await store.put(key, CORRUPT_BYTES);
    await trainerCall(context.trainerUrl, 'POST', '/admin/forget');
    reader.start();
    log(`${kind}: ${key} corrupted, trainer restarted without its weights, reader restarted`);
    const { runId: waiting, ...record } = await awaitOperatorWait(
      client,
      { kind, key, runId: () => runId },
      context.operatorBoundMs,
    );
    await store.put(key, original);
    await retryAsOperator(client, waiting, kind, log);
    return record;
  }
}

/** Where the committed version and the trainer's are read. */
export interface CommitProbe {
  /** The run's committed policy version; undefined when it has no commit yet or no iteration left to run. */
  committedVersion(): Promise<number | undefined>;
  /** The version of the run's policy that the trainer holds. */
  trainerVersion(): Promise<number>;
}

/** The current run's probe: its latest pointer in storage, its policy at the trainer. */
function commitProbe(context: CorruptionContext & { trainerUrl: string }, runId: string): CommitProbe {
  return {
    async committedVersion() {
      const latest = await getJson<LatestPointer>(context.store, latestKey(runId));
      const version = latest?.versions[runId];
      if (!latest || version === undefined || version === 0 || latest.iteration >= context.iterations)
        return undefined;
      return version;
    },
    async trainerVersion() {
      const held = (await trainerCall(
        context.trainerUrl,
        'GET',
        `/v1/policies/${encodeURIComponent(runId)}`,
      )) as { policyVersion: number };
      return held.policyVersion;
    },
  };
}

/**
 * Stops the trainer pool with the trainer at the run's committed version (no update in flight, no step applied
 * but not committed) and returns that version. It waits for the trainer to reach the commit with the pool
 * RUNNING: a step the trainer has applied commits only when the pool finishes its update, and an update a kill
 * interrupted finishes only in its retry, on a restarted pool. A kill that lands after an update applied its step
 * (the look and the kill race the pool) leaves the trainer ahead: the pool is started again and the wait
 * resumes. Undefined, with the pool running, when the run has no commit to corrupt or the deadline passes.
 */
export async function stopPoolAtCommit(
  pool: Pick<SupervisedWorker, 'kill' | 'start'>,
  probe: CommitProbe,
  deadline: number,
): Promise<number | undefined> {
  while (Date.now() < deadline) {
    const version = await probe.committedVersion();
    if (version === undefined) return undefined;
    if ((await probe.trainerVersion()) !== version) {
      await delay(250);
      continue;
    }
    await pool.kill();
    if ((await probe.trainerVersion()) === version && (await probe.committedVersion()) === version)
      return version;
    pool.start();
  }
  return undefined;
}

async function trainerCall(url: string, method: 'GET' | 'POST', path: string): Promise<unknown> {
  const response = await fetch(`${url}${path}`, { method, signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`recording trainer ${method} ${path}: HTTP ${response.status}`);
  return response.json();
}
