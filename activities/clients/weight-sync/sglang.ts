import { engineRoot } from '../../../config/server-url';
import {
  DEFAULT_HTTP_POLICY,
  EngineRefusal,
  getJson,
  parseAnswer,
  NO_TOKEN,
  postJson,
  type HttpPolicy,
  type TokenFor,
} from './http';
import { formatWeightTag, parseWeightTag } from '../weight-tag';
import { digestPrefix } from '../../../config/model-name';
import type { SnapshotCache } from './snapshot-cache';
import { refuseOtherRun } from './owner';
import type { WeightSyncAdapter } from './types';

/**
 * SGLang reloads a full Hugging Face model directory from its own disk and tags it with a version string:
 *
 *   POST {root}/update_weights_from_disk {model_path, weight_version, flush_cache, abort_all_requests}
 *        -> 200 {success: true, message, num_paused_requests}, or 400 {success: false, message}
 *   GET  {root}/get_weight_version -> {"weight_version": string}
 *
 * Source: sgl-project/sglang @0025436e, python/sglang/srt/entrypoints/http_server.py. The
 * `update_weights_from_disk` handler sets `tokenizer_manager.server_args.weight_version` only when the load
 * succeeded, and `GET /get_weight_version` returns exactly that field (`GET /get_model_info` repeats it
 * among other fields). It starts as "default" (`--weight-version`, server_args.py): no version here.
 *
 * The tag is `{run}@{N}-{digest}` (plain `{N}-{digest}` for a target without a run; no `-{digest}` for a
 * snapshot from before digests, weight-tag.ts), so the server says whose weights it holds, and which: version
 * N with another digest (published again since) is not N, and the new weights are loaded. One model per
 * server: start it with `--served-model-name {policy}`, the name samplers request; a sync for a run refuses a
 * server that holds another run's weights (owner.ts).
 */
export function sglangAdapter(
  cache: SnapshotCache,
  http: HttpPolicy = DEFAULT_HTTP_POLICY,
  tokenFor: TokenFor = NO_TOKEN,
): WeightSyncAdapter {
  return {
    engine: 'sglang',
    async servedVersion(server, target, signal) {
      const body = await getJson(`${engineRoot(server)}/get_weight_version`, http, signal, tokenFor(server));
      const tag = parseWeightTag((body as { weight_version?: unknown } | null)?.weight_version);
      if (!tag) return undefined;
      refuseOtherRun('sglang', server, target, tag.run);
      const { sha256 } = target.snapshot;
      if (tag.version === target.snapshot.version && sha256 && tag.digest !== digestPrefix(sha256)) {
        return undefined;
      }
      return tag.version;
    },
    async load(server, target, signal) {
      const { snapshot, run } = target;
      const url = `${engineRoot(server)}/update_weights_from_disk`;
      const body = {
        model_path: await cache.localPath(snapshot, signal),
        weight_version: formatWeightTag(snapshot.version, run, snapshot.sha256),
        flush_cache: true,
        abort_all_requests: false,
      };
      const text = await postJson(url, body, http, signal, tokenFor(server));
      const answer = parseAnswer(`POST ${url}`, text) as { success?: unknown; message?: unknown } | null;
      if (answer?.success !== true) {
        throw new EngineRefusal(200, `POST ${url}: load failed: ${String(answer?.message)}`);
      }
    },
  };
}
