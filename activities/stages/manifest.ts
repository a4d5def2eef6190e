import type { Manifest, PolicySet, RunStart } from '../../contracts/selfplay';
import type { RunConfig } from '../../config/schema';
import type { ObjectStore } from '../clients/storage/types';
import { getJson } from '../clients/storage/codec';
import { manifestKey } from '../clients/storage/keys';
import { objectAtUri } from '../clients/storage';
import { COMPLETE_MARKER } from '../clients/trainer-contract';
import { NON_RETRYABLE, nonRetryable, type NonRetryableType } from '../lib/errors';
import { policyNames } from '../../config/policies';

/**
 * Reading commits back: a manifest (of either contract version) and the state a run starts from after it.
 * Used by every way a run starts: its own last commit, `resumeFrom`, a fork and a rollback.
 */

/** `runs/{runId}/latest.json`: the newest committed iteration. Written only after its manifest. */
export interface LatestPointer {
  iteration: number;
  manifestKey: string;
  /** Each policy's version at that iteration. */
  versions: Record<string, number>;
}

export async function readManifest(
  store: ObjectStore,
  runId: string,
  iteration: number,
): Promise<Manifest | undefined> {
  const stored = await getJson<Manifest | ManifestV1>(store, manifestKey(runId, iteration));
  return stored && upgradeManifest(stored);
}

/**
 * A committed manifest that must exist; its absence is a non-retryable error of `type`, worded
 * `{label} has no committed iteration N (uri)`.
 */
export async function mustReadManifest(
  store: ObjectStore,
  runId: string,
  iteration: number,
  type: NonRetryableType = NON_RETRYABLE.invalidInput,
  label = `run "${runId}"`,
): Promise<Manifest> {
  const manifest = await readManifest(store, runId, iteration);
  if (!manifest) {
    throw nonRetryable(
      type,
      `${label} has no committed iteration ${iteration} (${store.uri(manifestKey(runId, iteration))})`,
    );
  }
  return manifest;
}

/**
 * The state a run of `config` starts from after `manifest` (no `resumedFrom`: the caller knows whether the
 * commit is another run's). A policy the config trains that the manifest does not have is a config change
 * the run cannot follow (its weights would come from nowhere).
 */
export function startAfter(config: RunConfig, manifest: Manifest): RunStart {
  const missing = policyNames(config).filter((name) => !manifest.policies[name]);
  if (missing.length > 0) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `iteration ${manifest.iteration} of run "${manifest.runId}" committed the policies ` +
        `${Object.keys(manifest.policies).join(', ')}, but this config trains ${policyNames(config).join(', ')}; ` +
        'resume with the same training.policy / training.policies',
    );
  }
  const policies: PolicySet = Object.fromEntries(
    policyNames(config).map((name) => [name, manifest.policies[name] as PolicySet[string]]),
  );
  return {
    nextIteration: manifest.iteration + 1,
    policies,
    ...(manifest.recipeStateKey ? { recipeStateKey: manifest.recipeStateKey } : {}),
  };
}

/**
 * Refuses, as a non-retryable error of `type` (prefixed with `label`), to start from a commit whose checkpoint
 * or snapshot of one of `policies` is no longer complete in storage: `training.retention` deletes them once
 * newer commits exist. Without this a rollback, fork or evaluation of such a commit would fail later, at a
 * restore or a weight sync, with a reason that does not say why.
 */
export async function mustBeRestorable(
  manifest: Manifest,
  policies: readonly string[],
  type: NonRetryableType,
  label?: string,
): Promise<void> {
  for (const policy of policies) {
    const committed = manifest.policies[policy];
    const saves = { checkpoint: committed?.checkpointUri, snapshot: committed?.snapshot?.uri };
    for (const [what, uri] of Object.entries(saves)) {
      if (!uri) continue;
      const { store, key } = objectAtUri(`${uri.replace(/\/+$/, '')}/${COMPLETE_MARKER}`);
      if (await store.exists(key)) continue;
      throw nonRetryable(
        type,
        `${label ? `${label}: ` : ''}iteration ${manifest.iteration} of run "${manifest.runId}" can no longer ` +
          `be restored: its ${what} of policy ${policy} (${uri}) is not in storage any more; training.retention ` +
          'keeps the last commits, every keepEvery-th one and those rolled back to, forked from or promoted',
      );
    }
  }
}

/** Every policy at version 0, the base weights (nothing committed yet). */
export const basePolicies = (config: RunConfig): PolicySet =>
  Object.fromEntries(policyNames(config).map((name) => [name, { version: 0 }]));

/** A manifest of contract version 1: one policy, its refs at the top level. */
interface ManifestV1 extends Omit<Manifest, 'v' | 'policies'> {
  v: 1;
  policyVersion: number;
  checkpointUri?: string;
  snapshot?: PolicySet[string]['snapshot'];
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
