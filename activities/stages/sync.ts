import { Context } from '@temporalio/activity';
import type { SyncInput, SyncResult } from '../../workflows/contracts';
import type { ActivityDeps } from './deps';
import { syncServersFor } from '../../config/env';
import { adapterFor } from '../clients/weight-sync';
import { syncServers } from '../clients/weight-sync/sync';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';

/**
 * Brings every inference server to the committed version, verified by reading the version back, before an
 * iteration samples. Runs on the rollout pool, next to the servers (vLLM and SGLang load from a local path).
 * A server that cannot reach the version fails the activity with the reasons: Temporal retries it with
 * backoff (the iteration waits), and after the last attempt the iteration fails saying which server is stale.
 * Sampling never starts while any server is behind.
 */
export function syncActivities(deps: ActivityDeps) {
  return {
    async syncWeights(input: SyncInput): Promise<SyncResult> {
      const t0 = Date.now();
      const { config, snapshot } = input;
      if (config.weightSync.engine === 'none') {
        throw nonRetryable(NON_RETRYABLE.invalidConfig, 'syncWeights called with weightSync.engine "none"');
      }
      const servers = syncServersFor(config, deps.env);
      if (servers.length === 0) {
        throw nonRetryable(
          NON_RETRYABLE.invalidConfig,
          'weightSync.servers is empty and no inference endpoint is configured',
        );
      }
      const ctx = Context.current();
      const beat = setInterval(
        () => ctx.heartbeat({ syncing: snapshot.version }),
        Math.max(1000, (config.timeouts.heartbeatSeconds * 1000) / 3),
      );
      try {
        const results = await syncServers(adapterFor(config.weightSync.engine), servers, snapshot, {
          attempts: config.weightSync.attempts,
          timeoutMs: config.weightSync.timeoutSeconds * 1000,
          signal: ctx.cancellationSignal,
        });
        const stale = results.filter((r) => !r.ok);
        if (stale.length > 0) {
          throw new Error(
            `${stale.length} of ${results.length} inference servers are not at version ${snapshot.version} of "${snapshot.policy}": ` +
              stale
                .map((r) => `${r.server}: ${r.reason ?? `serves version ${r.version ?? 'unknown'}`}`)
                .join('; '),
          );
        }
        return { servers: results, seconds: (Date.now() - t0) / 1000 };
      } finally {
        clearInterval(beat);
      }
    },
  };
}
