import { createHash } from 'node:crypto';
import {
  versionsOf,
  type CommitInput,
  type CommitResult,
  type Manifest,
  type PolicySet,
  type RunStart,
} from '../../workflows/contracts';
import type { RunConfig } from '../../config/schema';
import type { ActivityDeps } from './deps';
import { getJson, putJson } from '../clients/storage/codec';
import { latestKey, manifestKey, metricsKey } from '../clients/storage/keys';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import { policyNames } from '../../config/policies';

/** `runs/{runId}/latest.json`: the newest committed iteration. Written only after its manifest. */
export interface LatestPointer {
  iteration: number;
  manifestKey: string;
  /** Each policy's version at that iteration. */
  versions: Record<string, number>;
}

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

  async function readManifest(runId: string, iteration: number): Promise<Manifest | undefined> {
    const stored = await getJson<Manifest | ManifestV1>(store, manifestKey(runId, iteration));
    return stored && upgradeManifest(stored);
  }

  return {
    async commit(input: CommitInput): Promise<CommitResult> {
      const key = manifestKey(input.runId, input.iteration);
      const existing = await readManifest(input.runId, input.iteration);
      let hash = existing?.configHash;
      if (!existing) {
        hash = configHash(input.config);
        const manifest: Manifest = {
          v: 2,
          runId: input.runId,
          iteration: input.iteration,
          recipe: input.config.recipe,
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

    /** Where a run starts (after its own last commit, or after the commit named by `resumeFrom`), and its config hash. */
    async loadRunStart(input: { runId: string; config: RunConfig }): Promise<RunStart> {
      return { ...(await findRunStart(input)), configHash: configHash(input.config) };
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
      return startAfter(config, await mustRead(runId, ownLatest.iteration), from?.runId);
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
    const iteration =
      from.iteration ?? (await getJson<LatestPointer>(store, latestKey(from.runId)))?.iteration;
    if (iteration === undefined) {
      throw nonRetryable(
        NON_RETRYABLE.invalidConfig,
        `resumeFrom: run "${from.runId}" has no committed iteration in ${store.root}`,
      );
    }
    return startAfter(config, await mustRead(from.runId, iteration), from.runId);
  }

  async function mustRead(runId: string, iteration: number): Promise<Manifest> {
    const manifest = await readManifest(runId, iteration);
    if (!manifest) {
      throw nonRetryable(
        NON_RETRYABLE.invalidConfig,
        `resumeFrom: run "${runId}" has no committed iteration ${iteration} (${store.uri(manifestKey(runId, iteration))})`,
      );
    }
    return manifest;
  }
}

/**
 * The run's policies as committed by `manifest`. A policy the config trains that the manifest does not
 * have is a config change the run cannot follow (its weights would come from nowhere).
 */
function startAfter(config: RunConfig, manifest: Manifest, resumedFromRun: string | undefined): RunStart {
  const missing = policyNames(config).filter((name) => !manifest.policies[name]);
  if (missing.length > 0) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `iteration ${manifest.iteration} of run "${manifest.runId}" committed the policies ` +
        `${Object.keys(manifest.policies).join(', ')}, but this config trains ${policyNames(config).join(', ')}; ` +
        'resume with the same training.policy / training.policies',
    );
  }
  const policies = Object.fromEntries(policyNames(config).map((name) => [name, manifest.policies[name]]));
  return {
    nextIteration: manifest.iteration + 1,
    policies: policies as PolicySet,
    ...(manifest.recipeStateKey ? { recipeStateKey: manifest.recipeStateKey } : {}),
    ...(resumedFromRun ? { resumedFrom: { runId: resumedFromRun, iteration: manifest.iteration } } : {}),
  };
}

/** Every policy at version 0, the base weights (nothing committed yet). */
const basePolicies = (config: RunConfig): PolicySet =>
  Object.fromEntries(policyNames(config).map((name) => [name, { version: 0 }]));

/** A manifest of contract version 1: one policy, `training.policy`, with its refs at the top level. */
interface ManifestV1 extends Omit<Manifest, 'v' | 'policies'> {
  v: 1;
  policyVersion: number;
  checkpointUri?: string;
  snapshot?: Manifest['policies'][string]['snapshot'];
}

/** Version 1 manifests named no policy: their one policy is the snapshot's, else the default name. */
function upgradeManifest(stored: Manifest | ManifestV1): Manifest {
  if (stored.v === 2) return stored;
  const { policyVersion, checkpointUri, snapshot, v: _v, ...rest } = stored;
  const name = snapshot?.policy ?? 'policy';
  return {
    ...rest,
    v: 2,
    policies: {
      [name]: {
        version: policyVersion,
        ...(checkpointUri ? { checkpointUri } : {}),
        ...(snapshot ? { snapshot } : {}),
      },
    },
  };
}
