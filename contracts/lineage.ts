/**
 * Lineages: how a run rolls back without seeing what it abandoned.
 *
 * Every activity reuses what it finds under its deterministic key (stage shards, unit parts, the batch, the
 * manifest, the trainer's idempotency key), so a rolled-back run must not write iteration k+1 again under the
 * keys of the iteration k+1 it abandoned. A rollback therefore starts a new *lineage*: a new storage id
 * `{runId}.r{n}` (n counts the run's rollbacks) that every later iteration uses as its `runId` in keys,
 * child workflow ids and train-step idempotency keys. The lineage starts as a resume of the iteration it rolls
 * back to, read from the lineage that holds it, with the ordinary resume machinery (recipe state, checkpoint
 * and snapshot refs from that manifest). Abandoned keys stay where they are, untouched and unseen; an
 * abandoned activity still finishing after the rollback can only write under the abandoned lineage.
 *
 * The run keeps every lineage it ever started, in order, in its state (carried across continue-as-new) and in
 * `runs/{runId}/lineage.json`; the current one is the last. Each lineage but the run's first names where it
 * starts (`from`); following `from` back from the current lineage gives the *path* of kept iterations, which
 * is what status, state and report show. The first lineage of a run is the run id itself and has a `from`
 * only when the run was resumed (or forked) from another run.
 *
 * Deterministic code only: the run workflow, the activities and the CLI share it.
 */

import { RUN_ID } from '../config/schema';

/** Where a lineage starts: right after `iteration`, as committed in the lineage `lineage`. */
export interface LineageOrigin {
  lineage: string;
  iteration: number;
}

export interface Lineage {
  /** The storage id its iterations write under (`runs/{id}/…`). */
  id: string;
  from?: LineageOrigin;
}

/** `runs/{runId}/lineage.json`: written by every rollback, before the new lineage writes anything. */
export interface LineageRecord {
  v: 1;
  runId: string;
  /** Every lineage the run started, oldest first; the last is current. */
  lineages: Lineage[];
}

/** A run that never rolled back: one lineage, the run id, from where it was resumed if it was. */
export function initialLineages(
  runId: string,
  resumedFrom?: { runId: string; iteration: number },
): Lineage[] {
  return [
    {
      id: runId,
      ...(resumedFrom ? { from: { lineage: resumedFrom.runId, iteration: resumedFrom.iteration } } : {}),
    },
  ];
}

export const currentLineage = (lineages: readonly Lineage[]): Lineage => {
  const last = lineages.at(-1);
  if (!last) throw new Error('a run has at least one lineage');
  return last;
};

/** A kept stretch of iterations: `(after, upTo]` of lineage `id` (`upTo` undefined: to its latest commit). */
export interface PathSegment {
  id: string;
  after: number;
  upTo?: number;
}

/**
 * The kept iterations, oldest segment first: from the current lineage back along `from` through this run's
 * own lineages. A `from` that names another run (a resumed or forked run) ends the path.
 */
export function lineagePath(lineages: readonly Lineage[]): PathSegment[] {
  const byId = new Map(lineages.map((l) => [l.id, l]));
  const path: PathSegment[] = [];
  let lineage: Lineage | undefined = currentLineage(lineages);
  let upTo: number | undefined;
  while (lineage) {
    const after = lineage.from?.iteration ?? 0;
    path.unshift({ id: lineage.id, after, ...(upTo !== undefined ? { upTo } : {}) });
    upTo = after;
    lineage = lineage.from ? byId.get(lineage.from.lineage) : undefined;
  }
  return path;
}

/**
 * The lineage whose storage holds the committed `iteration` on the current path, or undefined when the
 * iteration is before the path (before the commit a resumed run started from). The iteration a lineage
 * starts from is held by the lineage it names, which may be another run.
 */
export function lineageHolding(lineages: readonly Lineage[], iteration: number): string | undefined {
  const path = lineagePath(lineages);
  for (let i = path.length - 1; i >= 0; i--) {
    const segment = path[i] as PathSegment;
    if (iteration > segment.after) return segment.id;
  }
  const first = lineages.find((l) => l.id === path[0]?.id);
  return first?.from && iteration === first.from.iteration ? first.from.lineage : undefined;
}

/** The first iteration a rollback may return to: the commit the run was resumed from, else iteration 1. */
export function firstAvailable(lineages: readonly Lineage[]): number {
  const first = lineages.find((l) => l.id === lineagePath(lineages)[0]?.id);
  return first?.from ? first.from.iteration : 1;
}

/** The lineage a rollback to `iteration` starts: `{runId}.r{n}`, from the lineage holding the iteration. */
export function rollbackLineage(
  runId: string,
  lineages: readonly Lineage[],
  iteration: number,
): Lineage & { from: LineageOrigin } {
  const holder = lineageHolding(lineages, iteration);
  if (!holder) throw new Error(`iteration ${iteration} is not on the run's path`);
  return { id: `${runId}.r${lineages.length}`, from: { lineage: holder, iteration } };
}

/** The run a lineage belongs to: a rollback's lineage `{run}.r{n}` is `{run}`. */
export const runOfLineage = (lineage: string): string => lineage.replace(/\.r\d+$/, '');

/** Why `id` cannot name a fork of `runId`: not a run id, the run's own, or one of its rollback lineages'. */
export function forkIdProblem(runId: string, id: unknown): string | undefined {
  if (typeof id !== 'string' || !RUN_ID.test(id))
    return 'expected {"id": NEW_RUN_ID, "iteration": N}; the id takes letters, digits, ".", "_" or "-"';
  if (id === runId || id.startsWith(`${runId}.r`)) return `the new run needs an id of its own, not "${id}"`;
  return undefined;
}

/** Why a fork of `request` cannot be started, or undefined when it can (storage is checked by the handler). */
export function forkProblem(
  context: { runId: string; lineages: readonly Lineage[]; lastCommitted: number },
  request: unknown,
): string | undefined {
  const { id, iteration } = (request ?? {}) as { id?: unknown; iteration?: unknown };
  const idProblem = forkIdProblem(context.runId, id);
  if (idProblem) return idProblem;
  if (typeof iteration !== 'number' || !Number.isInteger(iteration) || iteration < 1)
    return 'expected {"iteration": N} with N a committed iteration';
  if (iteration > context.lastCommitted)
    return `iteration ${iteration} is not committed (last committed: ${context.lastCommitted})`;
  if (iteration < firstAvailable(context.lineages) || !lineageHolding(context.lineages, iteration))
    return `iteration ${iteration} is not among the run's kept commits`;
  return undefined;
}

/** What the run knows when it validates a rollback. */
export interface RollbackContext {
  lineages: readonly Lineage[];
  lastCommitted: number;
  iterationInFlight: boolean;
  /** `training.checkpoint`: without checkpoints the trainer cannot be restored. */
  checkpoints: boolean;
}

/** Why a rollback to `request.iteration` cannot be done, or undefined when it can. */
export function rollbackProblem(context: RollbackContext, request: unknown): string | undefined {
  if (!context.checkpoints)
    return 'training.checkpoint is off: the trainer has no committed checkpoint to restore';
  const iteration = (request as { iteration?: unknown } | null)?.iteration;
  if (typeof iteration !== 'number' || !Number.isInteger(iteration))
    return 'expected {"iteration": N} with N a committed iteration';
  const first = firstAvailable(context.lineages);
  if (iteration < first)
    return `iteration ${iteration} is before the run's first committed state (iteration ${first})`;
  if (iteration > context.lastCommitted)
    return `iteration ${iteration} is not committed (last committed: ${context.lastCommitted})`;
  if (iteration === context.lastCommitted && !context.iterationInFlight)
    return `iteration ${iteration} is the last commit and no iteration is in flight: nothing to roll back`;
  return undefined;
}
