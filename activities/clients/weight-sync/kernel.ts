import { engineRoot } from '../../../config/server-url';
import {
  DEFAULT_HTTP_POLICY,
  EngineRefusal,
  listModels,
  postJson,
  NO_TOKEN,
  type HttpPolicy,
  type TokenFor,
} from './http';
import { otherRunsWeights, refuseOtherRun } from './owner';
import type { WeightSyncAdapter } from './types';

/**
 * The project's own sampler (OpenAI-compatible, one policy per process). It reads s3:// and file:// itself,
 * so the snapshot URI is passed as it is:
 *
 *   POST {root}/v1/sampler/load {"uri", "version", "lineage"?: run, "pin"?: true, "sha256"?}  -> 200, or 409
 *        lineage_conflict while it serves another run's weights, or snapshot_changed when the snapshot at the
 *        URI holds other weights than `sha256` (published again since)
 *   GET  {root}/v1/models -> data[] where id === policy carries weight_version: number, lineage: the run
 *        whose weights it serves (null: base weights, no one's), pinned: whether it serves a copy of a
 *        snapshot rather than the trainer's live weights, and weight_digest: that copy's weights' sha256
 *
 * A copy of the wanted version with other weights than the snapshot's `sha256` is not in sync: the load
 * names the digest, and the sampler replaces the copy. Snapshots from before digests: the version decides.
 *
 * Both with the token bound to the server (the kernel's SELFPLAY_KERNEL_TOKEN). One model per process: a sync for a run
 * refuses a sampler that serves another run's weights (owner.ts).
 */
export function kernelAdapter(
  http: HttpPolicy = DEFAULT_HTTP_POLICY,
  tokenFor: TokenFor = NO_TOKEN,
  pin = false,
): WeightSyncAdapter {
  return {
    engine: 'kernel',
    async servedVersion(server, target, signal) {
      const models = await listModels(engineRoot(server), http, signal, tokenFor(server));
      const model = models.find((m) => m.id === target.snapshot.policy);
      refuseOtherRun(
        'kernel',
        server,
        target,
        typeof model?.lineage === 'string' ? model.lineage : undefined,
      );
      // Pinned sync (a run that samples while it trains): live weights at the wanted version are not in sync,
      // since the next train step changes them under the requests. A sampler that does not say counts as pinned.
      if (pin && model?.pinned === false) return undefined;
      const { sha256 } = target.snapshot;
      if (sha256 && model?.pinned === true && model.weight_digest !== sha256) return undefined;
      const version = model?.weight_version;
      return Number.isSafeInteger(version) ? (version as number) : undefined;
    },
    async load(server, target, signal) {
      const { uri, version, sha256 } = target.snapshot;
      const body = {
        uri,
        version,
        ...(target.run ? { lineage: target.run } : {}),
        ...(pin ? { pin } : {}),
        ...(sha256 ? { sha256 } : {}),
      };
      await postJson(`${engineRoot(server)}/v1/sampler/load`, body, http, signal, tokenFor(server)).catch(
        (err: unknown) => {
          // The sampler took another run's load between our read and our load.
          if (err instanceof EngineRefusal && err.type === 'lineage_conflict')
            throw otherRunsWeights(err.message);
          throw err;
        },
      );
    },
  };
}
