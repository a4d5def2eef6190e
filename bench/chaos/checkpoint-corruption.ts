import { getJson } from '../../activities/clients/storage/codec';
import { checkpointPrefix, latestKey } from '../../activities/clients/storage/keys';
import { delay } from '../../activities/lib/backoff';
import type { LatestPointer } from '../../activities/stages/manifest';
import { CORRUPT_BYTES, type CorruptionContext } from './corruption';
import { awaitOperatorWait, retryAsOperator, type OperatorWaitRecord } from './operator';

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
    await reader.kill();
    const committed = await committedAtTrainer(context, runId);
    if (!committed) {
      reader.start();
      await delay(1_000);
      continue;
    }
    const key = `${checkpointPrefix(runId, runId, committed.version)}/state.json`;
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

/**
 * The run's committed iteration and its policy's version once the trainer holds exactly that version (a commit
 * may still follow the update the stopped pool finished); undefined when the run is done or it does not
 * within COMMIT_CATCH_UP_MS. The run trains one policy, named after it (chaosRunConfig).
 */
async function committedAtTrainer(
  context: CorruptionContext & { trainerUrl: string },
  runId: string,
): Promise<{ iteration: number; version: number } | undefined> {
  const until = Date.now() + COMMIT_CATCH_UP_MS;
  while (Date.now() < until) {
    const latest = await getJson<LatestPointer>(context.store, latestKey(runId));
    const version = latest?.versions[runId];
    if (!latest || version === undefined || latest.iteration >= context.iterations) return undefined;
    const held = (await trainerCall(
      context.trainerUrl,
      'GET',
      `/v1/policies/${encodeURIComponent(runId)}`,
    )) as {
      policyVersion: number;
    };
    if (held.policyVersion === version && version > 0) return { iteration: latest.iteration, version };
    await delay(250);
  }
  return undefined;
}

async function trainerCall(url: string, method: 'GET' | 'POST', path: string): Promise<unknown> {
  const response = await fetch(`${url}${path}`, { method, signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`recording trainer ${method} ${path}: HTTP ${response.status}`);
  return response.json();
}
