import { getJson } from '../../activities/clients/storage/codec';
import { checkpointPrefix, latestKey } from '../../activities/clients/storage/keys';
import { delay } from '../../activities/lib/backoff';
import type { LatestPointer } from '../../activities/stages/manifest';
import { CORRUPT_BYTES, type CorruptionContext } from './corruption';
import { awaitOperatorWait, retryAsOperator, type OperatorWaitRecord } from './operator';
import type { SupervisedWorker } from './stack';

/** How long the committed version may take to catch up with the trainer's (a commit after its update). */
const COMMIT_CATCH_UP_MS = 30_000;

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
    const latest = runId ? await getJson<LatestPointer>(store, latestKey(runId)) : undefined;
    if (!runId || !latest || latest.iteration >= context.iterations) {
      await delay(250);
      continue;
    }
    const version = await stopPoolAtCommit(reader, commitProbe(context, runId), context.deadline);
    if (version === undefined) {
      await delay(1_000);
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
 * Stops the trainer pool and returns the committed version once the trainer holds exactly that version (a commit
 * may still follow the update the stopped pool finished); undefined, with the pool running again, when the run
 * is done or it does not within COMMIT_CATCH_UP_MS.
 */
export async function stopPoolAtCommit(
  pool: Pick<SupervisedWorker, 'kill' | 'start'>,
  probe: CommitProbe,
  deadline: number,
): Promise<number | undefined> {
  await pool.kill();
  const until = Math.min(deadline, Date.now() + COMMIT_CATCH_UP_MS);
  while (Date.now() < until) {
    const version = await probe.committedVersion();
    if (version === undefined) break;
    if ((await probe.trainerVersion()) === version) return version;
    await delay(250);
  }
  pool.start();
  return undefined;
}

async function trainerCall(url: string, method: 'GET' | 'POST', path: string): Promise<unknown> {
  const response = await fetch(`${url}${path}`, { method, signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`recording trainer ${method} ${path}: HTTP ${response.status}`);
  return response.json();
}
