import {
  DEFAULT_HTTP_POLICY,
  engineRoot,
  listModels,
  postJson,
  type BearerToken,
  type HttpPolicy,
} from './http';
import type { WeightSyncAdapter } from './types';

/**
 * The project's own sampler (OpenAI-compatible, one policy per process). It reads s3:// and file:// itself,
 * so the snapshot URI is passed as it is:
 *
 *   POST {root}/v1/sampler/load {"uri": string, "version": number, "pin"?: true}  -> 200
 *   GET  {root}/v1/models -> data[] where id === policy carries weight_version: number
 *
 * Both with the kernel's bearer token (SELFPLAY_KERNEL_TOKEN).
 */
export function kernelAdapter(
  http: HttpPolicy = DEFAULT_HTTP_POLICY,
  token: BearerToken = undefined,
  pin = false,
): WeightSyncAdapter {
  return {
    engine: 'kernel',
    async servedVersion(server, policy, signal) {
      const models = await listModels(engineRoot(server), http, signal, token);
      const version = models.find((m) => m.id === policy)?.weight_version;
      return Number.isSafeInteger(version) ? (version as number) : undefined;
    },
    async load(server, snapshot, signal) {
      const body = { uri: snapshot.uri, version: snapshot.version, ...(pin ? { pin } : {}) };
      await postJson(`${engineRoot(server)}/v1/sampler/load`, body, http, signal, token);
    },
    servedModel: (policy) => policy,
  };
}
