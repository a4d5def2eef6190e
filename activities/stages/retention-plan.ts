import { lineagePath, type Lineage, type LineageOrigin } from '../../contracts/lineage';
import type { WeightVersion } from '../clients/storage/keys';

/**
 * Retention's decisions (`training.retention`), without I/O: which commits keep their checkpoints and
 * snapshots after a commit, and which stored ones may go. retention.ts reads and deletes around them.
 */

export interface KeepRule {
  /** The newest commits kept. */
  keepLast: number;
  /** Milestones: the iterations divisible by it; 0 keeps none. */
  keepEvery: number;
  /** Iterations in flight sample the snapshots of up to this many commits back (`pipeline.maxStaleness`). */
  maxStaleness: number;
}

export interface Kept {
  /** The run's commits whose checkpoints and snapshots stay, each with the lineage that holds it. */
  commits: LineageOrigin[];
  /**
   * The lineage whose version-0 saves (the base weights' snapshot) stay: the run's start counts as iteration 0
   * of its path, which iterations in flight may still sample while the run's first commits are the newest.
   */
  base?: string;
}

/**
 * What stays after the run committed `head`: along the path of kept iterations (contracts/lineage.ts), the
 * newest `keepLast` commits (at least maxStaleness + 1, so no snapshot an iteration in flight samples goes)
 * and every `keepEvery`-th iteration; and the commits the run's own lineages start from (the iterations it
 * rolled back to). A commit another run holds (the one a resumed run started from) is that run's to keep.
 */
export function keptCommits(lineages: readonly Lineage[], head: number, rule: KeepRule): Kept {
  const oldestKept = head - Math.max(rule.keepLast, rule.maxStaleness + 1) + 1;
  const commits = new Map<string, LineageOrigin>();
  const keep = (lineage: string, iteration: number): void => {
    commits.set(`${lineage}/${iteration}`, { lineage, iteration });
  };
  const path = lineagePath(lineages);
  for (const { id, after, upTo = head } of path) {
    for (let i = Math.max(after + 1, oldestKept); i <= upTo; i++) keep(id, i);
    if (rule.keepEvery > 0) {
      const first = (Math.floor(after / rule.keepEvery) + 1) * rule.keepEvery;
      for (let i = first; i <= upTo; i += rule.keepEvery) keep(id, i);
    }
  }
  const own = new Set(lineages.map((l) => l.id));
  for (const { from } of lineages) if (from && own.has(from.lineage)) keep(from.lineage, from.iteration);
  const start = path[0];
  const fromScratch = start !== undefined && start.after === 0;
  return {
    commits: [...commits.values()],
    ...(fromScratch && oldestKept <= 0 ? { base: start.id } : {}),
  };
}

/**
 * The stored checkpoints and snapshots to delete: every one that no kept commit names (`keptPrefixes`) and
 * that is not the base's while it is kept, except, in the current lineage, the versions above the head's
 * (`headVersions`, by policy): an iteration in flight is writing those, and a policy the head does not know is
 * left alone. Versions of any other lineage of the run (earlier on its path, or abandoned by a rollback) are
 * complete or never will be.
 */
export function versionsToDelete<V extends WeightVersion>(
  stored: readonly V[],
  kept: {
    prefixes: ReadonlySet<string>;
    base?: string;
    current: string;
    headVersions: Readonly<Record<string, number>>;
  },
): V[] {
  return stored.filter((v) => {
    if (kept.prefixes.has(v.prefix) || (v.version === 0 && v.runId === kept.base)) return false;
    if (v.runId !== kept.current) return true;
    const head = kept.headVersions[v.policy];
    return head !== undefined && v.version <= head;
  });
}
