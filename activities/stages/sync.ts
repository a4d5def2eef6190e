import type { SyncInput, SyncResult, WeightSnapshot } from '../../contracts/selfplay';
import type { RunConfig } from '../../config/schema';
import type { ActivityDeps } from './deps';
import { boundToken, servedModelTemplate, syncServersFor } from '../../config/env';
import { requireBound } from '../../config/endpoint-bindings';
import { adapterFor } from '../clients/weight-sync';
import { syncServers, type ServerSync } from '../clients/weight-sync/sync';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import { heartbeatWhile } from '../lib/heartbeat';

/**
 * Brings every inference server of the snapshot's policy to `snapshot`, verified by reading the version back (a no-op read when it
 * is there already). A server that cannot reach it throws with the reasons: Temporal retries the activity
 * with backoff (the iteration waits), and after the last attempt the iteration fails saying which server is
 * stale. Run at the start of every iteration and again by every shard that samples, so a server that
 * restarted in the middle of an iteration is brought back before anyone samples from it.
 */
export async function ensureServersAt(
  deps: ActivityDeps,
  config: RunConfig,
  snapshot: WeightSnapshot,
  signal: AbortSignal,
): Promise<ServerSync[]> {
  if (config.weightSync.engine === 'none') {
    throw nonRetryable(NON_RETRYABLE.invalidConfig, 'weight sync requested with weightSync.engine "none"');
  }
  const servers = syncServersFor(config, deps.env, snapshot.policy);
  if (servers.length === 0) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `no inference server serves policy "${snapshot.policy}": set weightSync.servers or its roles' endpoints`,
    );
  }
  // Each server gets the credential bound to it, so each must be one of the worker's servers.
  for (const server of servers) requireBound(deps.env.bindings, server, 'weight-sync server');
  const adapter = adapterFor(config.weightSync.engine, {
    tokenFor: (server) => boundToken(deps.env, server),
    // An iteration samples while the previous one trains: a kernel must not serve its live weights.
    pinKernelSnapshots: config.pipeline.maxStaleness > 0,
  });
  // vLLM names each version's adapter as the samplers request it; the other engines serve the policy's name.
  const model =
    config.weightSync.engine === 'vllm' ? servedModelTemplate(config, deps.env, snapshot.policy) : undefined;
  const results = await syncServers(adapter, servers, snapshot, {
    attempts: config.weightSync.attempts,
    timeoutMs: config.weightSync.timeoutSeconds * 1000,
    signal,
    // Whose weights: two runs of one policy name (a fork and its parent) never serve each other's.
    ...(config.runId ? { run: config.runId } : {}),
    ...(model ? { model } : {}),
  });
  const stale = results.filter((r) => !r.ok);
  if (stale.length > 0) {
    throw new Error(
      `${stale.length} of ${results.length} inference servers are not at version ${snapshot.version} of "${snapshot.policy}": ` +
        stale.map((r) => `${r.server}: ${r.reason ?? `serves version ${r.version ?? 'unknown'}`}`).join('; '),
    );
  }
  return results;
}

/** The iteration's first sync. Rollout pool, next to the servers (vLLM and SGLang load from a local path). */
export function syncActivities(deps: ActivityDeps) {
  return {
    async syncWeights(input: SyncInput): Promise<SyncResult> {
      const t0 = Date.now();
      const servers = await heartbeatWhile(
        () => ({ syncing: input.snapshot.version }),
        (signal) => ensureServersAt(deps, input.config, input.snapshot, signal),
      );
      return { servers, seconds: (Date.now() - t0) / 1000 };
    },
  };
}
