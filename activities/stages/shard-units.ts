import { setMaxListeners } from 'node:events';
import { isNonRetryable } from '../lib/errors';
import { beatNow, completionTokensSampled, heartbeatWhile } from '../lib/heartbeat';
import type { ObjectStore } from '../clients/storage/types';
import { createJson, createJsonl, getJson, getJsonl } from '../clients/storage/codec';
import { shardKey, unitKey } from '../clients/storage/keys';
import type { Unit } from '../recipes/types';

/**
 * Runs one stage over the units of a shard so that no finished work is ever redone:
 * - a shard whose output object exists is returned as it is (a retried or replayed activity);
 * - otherwise each unit's result is written as its own object the moment it finishes, and a retried
 *   attempt (after a worker crash, say) loads those and computes only the missing units;
 * - the shard object is written last, from the units in order, so its content does not depend on timing;
 * - every object is created, never replaced: an attempt that outlived its retry keeps what the retry stored.
 * An attempt ends only once every unit has settled, so no unit of a failed attempt is left running while the
 * retry computes it again. When a unit fails transiently, its siblings finish and store their results (the
 * retry reuses them); when one fails deterministically (activities/lib/errors.ts), the others are aborted
 * through their signal, since no retry follows.
 * Progress is heartbeated after every unit, which is how Temporal notices a dead worker, with the completion
 * tokens the attempt has sampled so far beside it (units in flight included; shown, not compared: a retry
 * samples its units again, activities/lib/heartbeat.ts).
 */
export interface ShardUnitsSpec<I extends Unit, O extends Unit> {
  store: ObjectStore;
  runId: string;
  iteration: number;
  stage: string;
  shard: number;
  inputs: readonly I[];
  /** One unit's work; `signal` aborts when the activity is cancelled or a sibling failed for good. */
  work: (input: I, signal: AbortSignal) => Promise<O>;
}

export interface ShardUnitsResult<O> {
  key: string;
  records: O[];
  reusedUnits: number;
}

export async function runShardUnits<I extends Unit, O extends Unit>(
  spec: ShardUnitsSpec<I, O>,
): Promise<ShardUnitsResult<O>> {
  const { runId, iteration, stage, shard } = spec;
  const key = shardKey(runId, iteration, stage, shard);
  return runStoredUnits({
    store: spec.store,
    key,
    partsPrefix: `${key.replace(/\.jsonl\.gz$/, '')}/`,
    partKey: (unit) => unitKey(runId, iteration, stage, shard, unit),
    inputs: spec.inputs,
    work: spec.work,
    details: (done, total) => ({ stage, shard, done, total }),
  });
}

/**
 * The same guarantee for any set of units: each finished unit at `partKey(unit)`, under `partsPrefix` (one
 * listing finds them all), and the whole `key` written last, in input order. Held-out evaluation stores
 * each benchmark item this way.
 */
export interface StoredUnitsSpec<I extends Unit, O> {
  store: ObjectStore;
  key: string;
  partsPrefix: string;
  partKey: (unit: number) => string;
  inputs: readonly I[];
  /** One unit's work; `signal` aborts when the activity is cancelled or a sibling failed for good. */
  work: (input: I, signal: AbortSignal) => Promise<O>;
  /** The heartbeat's details after each unit. */
  details: (done: number, total: number) => Record<string, unknown>;
}

export async function runStoredUnits<I extends Unit, O>(
  spec: StoredUnitsSpec<I, O>,
): Promise<ShardUnitsResult<O>> {
  const { store, key, inputs } = spec;
  const done = await getJsonl<O>(store, key);
  if (done) return { key, records: done, reusedUnits: done.length };

  const partKeys = new Set(await store.list(spec.partsPrefix));
  const results = new Map<number, O>();
  let reusedUnits = 0;
  const progress = () => spec.details(results.size, inputs.length);
  const live = () => ({ completionTokens: completionTokensSampled() });
  // Beat when a unit finishes and on a clock: one unit can outlast the heartbeat timeout.
  await heartbeatWhile({ progress, live }, async (cancelled) => {
    const siblings = new AbortController();
    const signal = AbortSignal.any([cancelled, siblings.signal]);
    // Every concurrent LLM call of the shard listens on it.
    setMaxListeners(0, signal);
    const settled = await Promise.allSettled(
      inputs.map(async (input) => {
        try {
          const partKey = spec.partKey(input.unit);
          const saved = partKeys.has(partKey) ? await getJson<O>(store, partKey) : undefined;
          if (saved) {
            reusedUnits++;
            results.set(input.unit, saved);
          } else {
            const output = await spec.work(input, signal);
            // Another attempt stored this unit meanwhile: its result stands (see the shard object below).
            const stored = (await createJson(store, partKey, output))
              ? output
              : await storedResult<O>(store, partKey);
            results.set(input.unit, stored);
          }
          beatNow();
        } catch (err) {
          if (isNonRetryable(err)) siblings.abort(err);
          throw err;
        }
      }),
    );
    const failures = settled.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    // The deterministic failure, if any (the aborted siblings' errors only echo it), else the first one.
    if (failures.length) throw failures.find(isNonRetryable) ?? failures[0];
  });

  const records = inputs.map((input) => results.get(input.unit) as O);
  return { key, records: await createOrReadShard(store, key, records), reusedUnits };
}

/**
 * Creates the shard object `key` of `records`, or returns the records of the attempt that created it first:
 * an attempt that outlived its retry (cut off from Temporal, still sampling) must not replace what later
 * stages may already have read.
 */
export async function createOrReadShard<T>(store: ObjectStore, key: string, records: T[]): Promise<T[]> {
  return (await createJsonl(store, key, records)) ? records : storedResult<T[]>(store, key, getJsonl);
}

/** An object another attempt created; it cannot vanish before this attempt ends but by an operator's hand. */
async function storedResult<T>(
  store: ObjectStore,
  key: string,
  read: (store: ObjectStore, key: string) => Promise<T | undefined> = getJson,
): Promise<T> {
  const value = await read(store, key);
  if (value === undefined) throw new Error(`${store.uri(key)} was created by another attempt, then deleted`);
  return value;
}

/** Reads a shard output another stage wrote; its absence means the workflow ran stages out of order. */
export async function readShard<T>(
  store: ObjectStore,
  runId: string,
  iteration: number,
  stage: string,
  shard: number,
): Promise<T[]> {
  const key = shardKey(runId, iteration, stage, shard);
  const rows = await getJsonl<T>(store, key);
  if (!rows)
    throw new Error(`${store.uri(key)} is missing: stage "${stage}" has not finished shard ${shard}`);
  return rows;
}
