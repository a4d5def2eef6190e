import {
  DEFAULT_HTTP_POLICY,
  EngineRefusal,
  engineRoot,
  getJson,
  parseAnswer,
  postJson,
  type HttpPolicy,
} from './http';
import type { SnapshotCache } from './snapshot-cache';
import type { WeightSyncAdapter } from './types';

/**
 * SGLang reloads a full Hugging Face model directory from its own disk and tags it with a version string:
 *
 *   POST {root}/update_weights_from_disk {model_path, weight_version: "<N>", flush_cache, abort_all_requests}
 *        -> 200 {success: true, message, num_paused_requests}, or 400 {success: false, message}
 *   GET  {root}/get_weight_version -> {"weight_version": string}
 *
 * Source: sgl-project/sglang @0025436e, python/sglang/srt/entrypoints/http_server.py. The
 * `update_weights_from_disk` handler sets `tokenizer_manager.server_args.weight_version` only when the load
 * succeeded, and `GET /get_weight_version` returns exactly that field (`GET /get_model_info` repeats it
 * among other fields). It starts as "default" (`--weight-version`, server_args.py): no version here.
 *
 * One model per server: start it with `--served-model-name {policy}`, the name samplers request.
 */
export function sglangAdapter(
  cache: SnapshotCache,
  http: HttpPolicy = DEFAULT_HTTP_POLICY,
): WeightSyncAdapter {
  return {
    engine: 'sglang',
    async servedVersion(server, _policy, signal) {
      const body = await getJson(`${engineRoot(server)}/get_weight_version`, http, signal);
      const version = (body as { weight_version?: unknown } | null)?.weight_version;
      return typeof version === 'string' && /^\d+$/.test(version) ? Number(version) : undefined;
    },
    async load(server, snapshot, signal) {
      const url = `${engineRoot(server)}/update_weights_from_disk`;
      const body = {
        model_path: await cache.localPath(snapshot, signal),
        weight_version: String(snapshot.version),
        flush_cache: true,
        abort_all_requests: false,
      };
      const text = await postJson(url, body, http, signal);
      const answer = parseAnswer(`POST ${url}`, text) as { success?: unknown; message?: unknown } | null;
      if (answer?.success !== true) {
        throw new EngineRefusal(200, `POST ${url}: load failed: ${String(answer?.message)}`);
      }
    },
    servedModel: (policy) => policy,
  };
}
