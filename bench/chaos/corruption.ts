import type { Client } from '@temporalio/client';
import type { S3Store } from '../../activities/clients/storage';
import { getJson } from '../../activities/clients/storage/codec';
import { filterSummaryKey, latestKey, shardKey } from '../../activities/clients/storage/keys';
import { delay } from '../../activities/lib/backoff';
import type { FilterResult } from '../../contracts/selfplay';
import { awaitOperatorWait, retryAsOperator, type OperatorWaitRecord } from './operator';
import type { SupervisedWorker } from './stack';

export type CorruptionKind = 'corrupt-shard' | 'corrupt-batch' | 'corrupt-checkpoint';

export interface CorruptionContext {
  client: Client;
  store: S3Store;
  /** The pool worker whose activities read the object: stopped while it is corrupted. */
  readers: Record<CorruptionKind, SupervisedWorker>;
  /** The run being driven now, and its iterations. */
  currentRun: () => string | undefined;
  iterations: number;
  /** How long the run may take to wait for its operator once the reader is back. */
  operatorBoundMs: number;
  deadline: number;
  log: (line: string) => void;
}

/** Bytes that are neither gzip nor the batch's sha256: what a torn write or a bit-rotted disk leaves. */
export const CORRUPT_BYTES = Buffer.from('corrupted by the chaos suite\n');

/** Shard stages whose output the filter reads and a retry recomputes from the stored units. */
const SHARD_STAGES = ['judge', 'solve', 'gate', 'propose'] as const;

/**
 * Corrupts a stored object the current run will read, waits for the run to wait for its operator with the
 * corruption as its cause, then does what the operator would and runs the iteration again as `selfplay retry`
 * does. The object's reader is stopped before the object is chosen, so the corruption never races the read:
 *
 * - `corrupt-shard`: a stage's shard output (`.../{stage}/shard-0000.jsonl.gz`) of an iteration whose filter
 *   has not finished (no `update/filter.json`). The filter reads every stage's shard and runs on the
 *   orchestrator pool, which is stopped: whatever read the shard before it was corrupted, the filter reads
 *   the corrupt bytes after. The operator deletes it; the retried stage recomputes it from its stored units.
 * - `corrupt-batch`: a policy's training batch (`update/batch-{policy}.jsonl.gz`). The trainer pool is
 *   stopped before the iteration's filter finishes, so its update cannot have sent the batch to the trainer;
 *   the batch is corrupted once the filter's summary names it. The filter does not rewrite a batch its
 *   summary names, so the operator restores the original bytes (from a backup, here kept in memory).
 *
 * An iteration that passed the point first is skipped; the next one is tried.
 */
export async function corruptAndRepair(
  kind: 'corrupt-shard' | 'corrupt-batch',
  context: CorruptionContext,
): Promise<OperatorWaitRecord> {
  const { client, store, log } = context;
  const reader = context.readers[kind];
  for (;;) {
    if (Date.now() > context.deadline)
      throw new Error(`${kind}: no iteration to corrupt before the deadline`);
    const target = await readyTarget(context);
    if (!target) {
      await delay(250);
      continue;
    }
    await reader.kill();
    // The reader is down and the filter had not finished: no activity reads the object before the restart.
    const key = (await store.exists(filterSummaryKey(target.runId, target.iteration)))
      ? undefined
      : kind === 'corrupt-shard'
        ? target.shard
        : await batchOnceFiltered(context, target);
    if (!key) {
      reader.start();
      await delay(1_000);
      continue;
    }
    const original = await store.get(key);
    await store.put(key, CORRUPT_BYTES);
    reader.start();
    log(`${kind}: ${key} corrupted, reader restarted`);
    const { runId, ...record } = await awaitOperatorWait(
      client,
      { kind, key, runId: () => target.runId },
      context.operatorBoundMs,
    );
    if (kind === 'corrupt-shard' || !original) await store.delete(key);
    else await store.put(key, original);
    await retryAsOperator(client, runId, kind, log);
    return record;
  }
}

interface Target {
  runId: string;
  iteration: number;
  /** A shard output of the iteration that exists now. */
  shard: string;
}

/**
 * The current run's iteration in flight, once it has a shard output (its trainers are prepared: the trainer
 * pool has nothing more to do before the update) and while its filter has not finished; undefined until then
 * (or while the run is between iterations or done).
 */
async function readyTarget(context: CorruptionContext): Promise<Target | undefined> {
  const { store } = context;
  const runId = context.currentRun();
  if (!runId) return undefined;
  const committed = (await getJson<{ iteration: number }>(store, latestKey(runId)))?.iteration ?? 0;
  const iteration = committed + 1;
  if (iteration > context.iterations) return undefined;
  if (await store.exists(filterSummaryKey(runId, iteration))) return undefined;
  for (const stage of SHARD_STAGES) {
    const shard = shardKey(runId, iteration, stage, 0);
    if (await store.exists(shard)) return { runId, iteration, shard };
  }
  return undefined;
}

/** The key of a batch with rows that the filter's summary names (an empty batch is never sent to a trainer). */
async function batchToCorrupt(context: CorruptionContext, target: Target): Promise<string | undefined> {
  const summary = await getJson<FilterResult>(
    context.store,
    filterSummaryKey(target.runId, target.iteration),
  );
  return Object.values(summary?.batches ?? {}).find((b) => b.rows > 0)?.key;
}

/** Waits for the iteration's filter (the orchestrator pool runs it) to write its summary, then as above. */
async function batchOnceFiltered(context: CorruptionContext, target: Target): Promise<string | undefined> {
  while (!(await context.store.exists(filterSummaryKey(target.runId, target.iteration)))) {
    if (Date.now() > context.deadline) return undefined;
    await delay(250);
  }
  return batchToCorrupt(context, target);
}
