import type { Manifest, RunStart } from '../../contracts/selfplay';
import type { RunConfig } from '../../config/schema';
import {
  currentLineage,
  lineageHolding,
  type Lineage,
  type LineageOrigin,
  type LineageRecord,
} from '../../contracts/lineage';
import type { ObjectStore } from '../clients/storage/types';
import type { ActivityDeps } from './deps';
import { getJson, putJson } from '../clients/storage/codec';
import { mustBeRestorable, mustReadManifest, readManifest, startAfter, type LatestPointer } from './manifest';
import { forkKey, forksPrefix, latestKey, lineageKey } from '../clients/storage/keys';
import { NON_RETRYABLE, nonRetryable, type NonRetryableType } from '../lib/errors';

/**
 * Storage side of lineages (contracts/lineage.ts): the record `runs/{runId}/lineage.json`, and where a
 * lineage starts. Orchestrator pool.
 *
 * The kernel after a rollback to iteration k, committed at policy version p. Nothing restores it at the
 * rollback itself: the new lineage's first iteration runs prepareTrainer with version p and k's checkpoint,
 * which restores whenever the kernel's version is not p. That is enough because the kernel's version moves
 * up only by a step, and a step is applied only on the version it was sampled from (`baseVersion`):
 * - above p (k+1's step applied, or later commits): restored from k's checkpoint;
 * - exactly p: no step was applied since k's commit, so the kernel holds k's weights. Iterations after k that
 *   skipped their step (an empty batch) committed k's checkpoint again, and a restore by the abandoned lineage
 *   targets its own head version, so it too loads k's weights when that version is p;
 * - a request of the abandoned lineage still arriving later: the cancelled iteration ends only once its
 *   trainer activity has stopped (activity-options.ts); a step already inside the kernel was sampled from
 *   version p or later, so it either is refused or moves the kernel to p+1 with other weights, which the new
 *   lineage's step (sampled from p) meets as a version conflict, and the update restores k's checkpoint
 *   before applying it. Its idempotency key names the new lineage, so no abandoned response is returned
 *   in its place.
 */
export function lineageActivities(deps: ActivityDeps) {
  const { store } = deps;
  return {
    /**
     * The committed state at `from`, as a run starting right after it sees it: what a rollback restores.
     * Read-only, so the rollback calls it before it cancels anything: a missing manifest refuses the rollback
     * with nothing changed.
     */
    async lineageStart(input: { from: LineageOrigin; config: RunConfig }): Promise<RunStart> {
      const { from, config } = input;
      const manifest = await mustReadManifest(store, from.lineage, from.iteration, undefined, from.lineage);
      const start = startAfter(config, manifest);
      await mustBeRestorable(manifest, Object.keys(start.policies), NON_RETRYABLE.invalidInput);
      return start;
    },

    /** Records the run's lineages; the rollback writes it before the new lineage writes anything. */
    async saveLineages(input: { runId: string; lineages: Lineage[] }): Promise<void> {
      await putJson(store, lineageKey(input.runId), {
        v: 1,
        runId: input.runId,
        lineages: input.lineages,
      } satisfies LineageRecord);
    },
  };
}

export async function readLineages(store: ObjectStore, runId: string): Promise<Lineage[] | undefined> {
  return (await getJson<LineageRecord>(store, lineageKey(runId)))?.lineages;
}

/**
 * `runs/{lineage}/forks/{runId}.json`: run `runId` starts after the lineage's commit `iteration` (a fork, a
 * resume, a continual-training job), so the lineage's retention keeps that commit's checkpoint and snapshot.
 */
export interface ForkRecord {
  v: 1;
  runId: string;
  iteration: number;
}

/** Records that `runId` starts from `from`; written before the run reads the commit's weights. */
export const recordFork = (store: ObjectStore, from: LineageOrigin, runId: string): Promise<void> =>
  putJson(store, forkKey(from.lineage, runId), {
    v: 1,
    runId,
    iteration: from.iteration,
  } satisfies ForkRecord);

/** The runs started from commits of `lineage`. */
export async function forksOf(store: ObjectStore, lineage: string): Promise<ForkRecord[]> {
  const records = await Promise.all(
    (await store.list(forksPrefix(lineage))).map((key) => getJson<ForkRecord>(store, key)),
  );
  return records.filter((r): r is ForkRecord => r !== undefined);
}

/**
 * The newest commit of the current lineage (else the commit it started from): where a restart goes on.
 * Undefined for a run that has committed nothing and started from nothing.
 */
async function currentLineageHead(
  store: ObjectStore,
  lineages: Lineage[],
): Promise<LineageOrigin | undefined> {
  const current = currentLineage(lineages);
  const latest = await getJson<LatestPointer>(store, latestKey(current.id));
  return latest ? { lineage: current.id, iteration: latest.iteration } : current.from;
}

/** Where a rolled-back run goes on after a restart: its current lineage's last commit, else where it began. */
export async function currentLineageStart(
  store: ObjectStore,
  lineages: Lineage[],
  config: RunConfig,
): Promise<RunStart> {
  const head = await currentLineageHead(store, lineages);
  if (!head) throw new Error(`lineage ${currentLineage(lineages).id} has neither a commit nor an origin`);
  return startAfter(
    config,
    await mustReadManifest(store, head.lineage, head.iteration, undefined, head.lineage),
  );
}

/** The run's lineages as stored; a run that never rolled back has one, its own id. */
export const lineagesOf = async (store: ObjectStore, runId: string): Promise<Lineage[]> =>
  (await readLineages(store, runId)) ?? [{ id: runId }];

/** The run has no kept commit where one was asked for: the caller's mistake, unlike a storage failure. */
export class NotCommittedError extends Error {}

/**
 * A `catch` handler for readers of another run's commits: a missing commit becomes the non-retryable failure
 * `type` (prefixed with where it was named); anything else (storage down, a corrupt object) stays as it is,
 * so Temporal retries it.
 */
export const notCommittedAs =
  (type: NonRetryableType, prefix: string) =>
  (err: unknown): never => {
    throw err instanceof NotCommittedError ? nonRetryable(type, `${prefix}: ${err.message}`) : err;
  };

/**
 * The storage id and manifest of the run's kept iteration `at` (the latest kept one by default): what every
 * reader of another run's commits uses (resumeFrom, fork, continual jobs, state), so a run that rolled back
 * is read along the iterations it kept, never from a lineage it abandoned. Throws NotCommittedError when the
 * run has no such commit.
 */
export async function keptManifest(
  store: ObjectStore,
  runId: string,
  at?: number,
): Promise<{ lineage: string; manifest: Manifest }> {
  const lineages = await lineagesOf(store, runId);
  const iteration = at ?? (await currentLineageHead(store, lineages))?.iteration;
  if (iteration === undefined)
    throw new NotCommittedError(`run "${runId}" has no committed iteration in ${store.root}`);
  const lineage = lineageHolding(lineages, iteration);
  const manifest = lineage && (await readManifest(store, lineage, iteration));
  if (!lineage || !manifest)
    throw new NotCommittedError(`run "${runId}" has no committed iteration ${iteration} in ${store.root}`);
  return { lineage, manifest };
}
