import { createHash } from 'node:crypto';
import {
  versionsOf,
  type CommitInput,
  type CommitResult,
  type Manifest,
  type RunStart,
} from '../../contracts/selfplay';
import type { RunConfig } from '../../config/schema';
import type { ActivityDeps } from './deps';
import { getJson, putJson } from '../clients/storage/codec';
import { latestKey, manifestKey, metricsKey } from '../clients/storage/keys';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import { currentLineageStart, keptManifest, notCommittedAs, readLineages, recordFork } from './lineage';
import {
  basePolicies,
  mustBeRestorable,
  mustReadManifest,
  readManifest,
  startAfter as startAfterManifest,
  type LatestPointer,
} from './manifest';
import type { ObjectStore } from '../clients/storage/types';
import { requireRunAccess } from '../../config/run-access';

export function configHash(config: RunConfig): string {
  return createHash('sha256').update(JSON.stringify(config)).digest('hex').slice(0, 16);
}

/**
 * The end of an iteration: the manifest first, then the `latest` pointer. An iteration without a manifest
 * did not happen; a crash between the two leaves the pointer one behind, which the next commit or a resume
 * repairs. Orchestrator pool.
 */
export function commitActivities(deps: ActivityDeps) {
  const { store } = deps;

  return {
    async commit(input: CommitInput): Promise<CommitResult> {
      const key = manifestKey(input.runId, input.iteration);
      const existing = await readManifest(store, input.runId, input.iteration);
      let hash = existing?.configHash;
      if (!existing) {
        hash = configHash(input.config);
        const schedule = deps.recipes[input.config.recipe]?.schedule?.(input.config, input.iteration);
        const manifest: Manifest = {
          v: 2,
          runId: input.runId,
          iteration: input.iteration,
          recipe: input.config.recipe,
          ...(schedule ? { schedule } : {}),
          policies: input.policies,
          ...(input.recipeStateKey ? { recipeStateKey: input.recipeStateKey } : {}),
          configHash: hash,
          metrics: input.metrics,
          artifacts: input.artifacts,
          committedAt: new Date().toISOString(),
        };
        await putJson(store, metricsKey(input.runId, input.iteration), input.metrics);
        await putJson(store, key, manifest);
      }
      const latest = await getJson<LatestPointer>(store, latestKey(input.runId));
      if (!latest || latest.iteration < input.iteration) {
        await putJson(store, latestKey(input.runId), {
          iteration: input.iteration,
          manifestKey: key,
          versions: versionsOf(input.policies),
        } satisfies LatestPointer);
      }
      return { manifestKey: key, ...(hash ? { configHash: hash } : {}) };
    },

    /**
     * Where a run starts (after its own last commit, or after the commit named by `resumeFrom`), and its config
     * hash. A run that has rolled back goes on in its current lineage (activities/stages/lineage.ts). A config
     * that reaches beyond the deployment (config/run-access.ts) is refused here, before anything else.
     */
    async loadRunStart(input: { runId: string; config: RunConfig }): Promise<RunStart> {
      requireRunAccess(input.config, deps.env);
      const owner = await lineageOwner(store, input.runId);
      if (owner) {
        throw nonRetryable(
          NON_RETRYABLE.invalidConfig,
          `runId: "${input.runId}" is a rollback lineage of run "${owner}" and its storage is that run's; ` +
            `choose another id (resumeFrom {"runId":"${owner}"} starts after that run's kept iterations)`,
        );
      }
      const hash = configHash(input.config);
      const lineages = await readLineages(store, input.runId);
      if (!lineages) return { ...(await findRunStart(input)), configHash: hash };
      const resumed = lineages[0]?.from;
      return {
        ...(await currentLineageStart(store, lineages, input.config)),
        ...(resumed ? { resumedFrom: { runId: resumed.lineage, iteration: resumed.iteration } } : {}),
        lineages,
        configHash: hash,
      };
    },
  };

  async function findRunStart(input: { runId: string; config: RunConfig }): Promise<RunStart> {
    const { runId, config } = input;
    const ownLatest = await getJson<LatestPointer>(store, latestKey(runId));
    const from = config.resumeFrom;
    if (!from || (from.runId === runId && from.iteration === undefined)) {
      if (!ownLatest) {
        if (from)
          throw nonRetryable(
            NON_RETRYABLE.invalidConfig,
            `resumeFrom: run "${from.runId}" has no committed iteration in ${store.root}`,
          );
        return { nextIteration: 1, policies: basePolicies(config) };
      }
      return startAfter(config, await mustRead(store, runId, ownLatest.iteration), from?.runId);
    }
    if (from.runId === runId) {
      throw nonRetryable(
        NON_RETRYABLE.invalidConfig,
        `resumeFrom.iteration: run "${runId}" cannot restart from its own iteration ${from.iteration}; ` +
          `start a new runId with resumeFrom {"runId":"${runId}","iteration":${from.iteration}} to fork it`,
      );
    }
    if (ownLatest) {
      throw nonRetryable(
        NON_RETRYABLE.invalidConfig,
        `runId: run "${runId}" already has commits up to iteration ${ownLatest.iteration}; choose a new runId to resume "${from.runId}"`,
      );
    }
    // Read along the iterations the run kept: a run that rolled back holds them in its lineages.
    const { lineage, manifest } = await keptManifest(store, from.runId, from.iteration).catch(
      notCommittedAs(NON_RETRYABLE.invalidConfig, 'resumeFrom'),
    );
    const start = startAfter(config, manifest, lineage);
    // Recorded before the weights are checked, so the other run's retention keeps them from now on.
    await recordFork(store, { lineage, iteration: manifest.iteration }, runId);
    await mustBeRestorable(manifest, Object.keys(start.policies), NON_RETRYABLE.invalidConfig, 'resumeFrom');
    return start;
  }
}

/**
 * The run whose rollback lineage `runId` is (`{run}.r{n}`, listed in that run's lineage record), if any: a
 * new run under that id would write into the other run's storage.
 */
async function lineageOwner(store: ObjectStore, runId: string): Promise<string | undefined> {
  const base = /^(.+)\.r\d+$/.exec(runId)?.[1];
  if (!base) return undefined;
  const lineages = await readLineages(store, base);
  return lineages?.some((l) => l.id === runId) ? base : undefined;
}

/** A commit named by the run itself or by `resumeFrom`: missing, it is a config error. */
const mustRead = (store: ObjectStore, runId: string, iteration: number): Promise<Manifest> =>
  mustReadManifest(store, runId, iteration, NON_RETRYABLE.invalidConfig, `resumeFrom: run "${runId}"`);

function startAfter(config: RunConfig, manifest: Manifest, resumedFromRun: string | undefined): RunStart {
  return {
    ...startAfterManifest(config, manifest),
    ...(resumedFromRun ? { resumedFrom: { runId: resumedFromRun, iteration: manifest.iteration } } : {}),
  };
}
