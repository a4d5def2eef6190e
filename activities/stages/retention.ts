import type { CheckpointRef } from '../../contracts/continual';
import { currentLineage, lineageHolding, type LineageOrigin } from '../../contracts/lineage';
import { versionsOf, type RetentionInput, type RetentionResult } from '../../contracts/selfplay';
import { getJson } from '../clients/storage/codec';
import { weightPrefixes, weightVersionOf, type WeightVersion } from '../clients/storage/keys';
import type { ObjectStore } from '../clients/storage/types';
import { COMPLETE_MARKER } from '../clients/trainer-contract';
import { isCommitPointer, LINEAGES_ROOT } from '../continual/keys';
import { forEachLimited } from '../lib/concurrency';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import { heartbeatWhile } from '../lib/heartbeat';
import type { ActivityDeps } from './deps';
import { forksOf } from './lineage';
import { mustReadManifest } from './manifest';
import { keptCommits, versionsToDelete } from './retention-plan';

const PARALLEL_DELETES = 8;

/**
 * `training.retention`, run by the run workflow after each commit on the orchestrator pool: deletes the
 * checkpoints and snapshots of the run's lineages that no kept commit names (retention-plan.ts). Besides the
 * run's own kept commits, a commit stays while something outside the run names it: another run started from
 * it (the fork record that run wrote before reading the weights) or a continual lineage's promoted or latest
 * pointer. Those are read after the listing, just before deleting, so a fork recorded meanwhile is seen.
 *
 * Safe to repeat and to crash in: the run starts it only once the newer commit is durable, it deletes a save's
 * COMPLETE marker before its other objects (a half-deleted save is never taken for a complete one), and the
 * next commit's pass deletes what a crashed one left. It never deletes a manifest or a stage's output.
 */
export function retentionActivities(deps: ActivityDeps) {
  const { store } = deps;
  return {
    async applyRetention(input: RetentionInput): Promise<RetentionResult> {
      const { keepLast, keepEvery } = input.retention;
      if (keepLast === 'all') return { deleted: [] };
      const { lineages, head } = input;
      return heartbeatWhile(
        () => ({ retention: head }),
        async () => {
          const own = lineages.map((l) => l.id);
          const stored = await storedVersions(store, own);
          const kept = keptCommits(lineages, head, { keepLast, keepEvery, maxStaleness: input.maxStaleness });
          const named = [...kept.commits, ...(await namedFromOutside(store, own))];
          const commits = new Map(named.map((c) => [`${c.lineage}/${c.iteration}`, c]));
          const prefixes = new Set<string>();
          let headVersions: Record<string, number> = {};
          for (const commit of commits.values()) {
            const manifest = await mustReadManifest(
              store,
              commit.lineage,
              commit.iteration,
              NON_RETRYABLE.invalidInput,
              `retention deleted nothing: lineage "${commit.lineage}"`,
            );
            for (const committed of Object.values(manifest.policies)) {
              for (const uri of [committed.checkpointUri, committed.snapshot?.uri]) {
                if (uri) prefixes.add(keyOf(store, uri, commit));
              }
            }
            if (commit.iteration === head && commit.lineage === lineageHolding(lineages, head)) {
              headVersions = versionsOf(manifest.policies);
            }
          }
          const doomed = versionsToDelete(stored, {
            prefixes,
            ...(kept.base ? { base: kept.base } : {}),
            current: currentLineage(lineages).id,
            headVersions,
          });
          await forEachLimited(doomed, PARALLEL_DELETES, (version) => deleteSave(store, version));
          return { deleted: doomed.map((v) => v.prefix) };
        },
      );
    },
  };
}

/** Every checkpoint and snapshot stored under the lineages, with its keys. */
async function storedVersions(
  store: ObjectStore,
  lineages: readonly string[],
): Promise<Array<WeightVersion & { keys: string[] }>> {
  const byPrefix = new Map<string, WeightVersion & { keys: string[] }>();
  for (const prefix of lineages.flatMap(weightPrefixes)) {
    for (const key of await store.list(prefix)) {
      const version = weightVersionOf(key);
      if (!version) continue;
      const entry = byPrefix.get(version.prefix) ?? { ...version, keys: [] };
      entry.keys.push(key);
      byPrefix.set(version.prefix, entry);
    }
  }
  return [...byPrefix.values()];
}

/** The commits of the lineages that other runs started from, and that continual lineages point to. */
async function namedFromOutside(store: ObjectStore, lineages: readonly string[]): Promise<LineageOrigin[]> {
  const forks = await Promise.all(
    lineages.map(async (lineage) =>
      (await forksOf(store, lineage)).map((f) => ({ lineage, iteration: f.iteration })),
    ),
  );
  const pointers = await Promise.all(
    (await store.list(LINEAGES_ROOT))
      .filter(isCommitPointer)
      .map((key) => getJson<CheckpointRef>(store, key)),
  );
  const own = new Set(lineages);
  return [
    ...forks.flat(),
    ...pointers.flatMap((p) => (p && own.has(p.runId) ? [{ lineage: p.runId, iteration: p.iteration }] : [])),
  ];
}

/**
 * The store key of a save a kept commit names (its URI without a trailing slash). One outside this store (the
 * storage moved since) could not be told apart from what may go, so the pass deletes nothing.
 */
function keyOf(store: ObjectStore, uri: string, commit: LineageOrigin): string {
  const root = `${store.root}/`;
  const trimmed = uri.replace(/\/+$/, '');
  if (trimmed.startsWith(root)) return trimmed.slice(root.length);
  throw nonRetryable(
    NON_RETRYABLE.invalidConfig,
    `retention deleted nothing: iteration ${commit.iteration} of "${commit.lineage}" names ${uri}, ` +
      `which is not in this worker's storage ${store.root}`,
  );
}

/** The marker first: from then on no reader takes what is left for a complete save. */
async function deleteSave(store: ObjectStore, save: { prefix: string; keys: string[] }): Promise<void> {
  const marker = `${save.prefix}/${COMPLETE_MARKER}`;
  if (save.keys.includes(marker)) await store.delete(marker);
  await forEachLimited(
    save.keys.filter((k) => k !== marker),
    PARALLEL_DELETES,
    (key) => store.delete(key),
  );
}
