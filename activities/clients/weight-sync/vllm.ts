import {
  DEFAULT_HTTP_POLICY,
  EngineRefusal,
  engineRoot,
  listModels,
  postJson,
  type HttpPolicy,
} from './http';
import type { SnapshotCache } from './snapshot-cache';
import type { WeightSyncAdapter } from './types';

/**
 * vLLM with runtime LoRA (`VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`, `--enable-lora`). vLLM refuses to
 * reload a name it has, so each version gets its own name, `{policy}-v{N}`, the model samplers ask for:
 *
 *   POST {root}/v1/load_lora_adapter   {"lora_name", "lora_path"}  -> 200 "Success: ..."
 *   POST {root}/v1/unload_lora_adapter {"lora_name"}
 *   GET  {root}/v1/models -> the adapters are listed by name
 *
 * The served version is the newest `{policy}-v{N}` listed. After a load, adapters other than N and N-1 are
 * unloaded (N-1 may still be finishing requests), best effort.
 */
export function vllmAdapter(cache: SnapshotCache, http: HttpPolicy = DEFAULT_HTTP_POLICY): WeightSyncAdapter {
  const servedModel = (policy: string, version: number): string => `${policy}-v${version}`;

  const listedVersions = async (root: string, policy: string, signal?: AbortSignal): Promise<number[]> => {
    const prefix = `${policy}-v`;
    return (await listModels(root, http, signal))
      .map((m) => m.id)
      .filter((id): id is string => typeof id === 'string' && id.startsWith(prefix))
      .map((id) => id.slice(prefix.length))
      .filter((v) => /^\d+$/.test(v))
      .map(Number);
  };

  return {
    engine: 'vllm',
    servedModel,
    async servedVersion(server, policy, signal) {
      const versions = await listedVersions(engineRoot(server), policy, signal);
      return versions.length === 0 ? undefined : Math.max(...versions);
    },
    async load(server, snapshot, signal) {
      const root = engineRoot(server);
      const { policy, version } = snapshot;
      const listed = await listedVersions(root, policy, signal);
      if (!listed.includes(version)) {
        const body = {
          lora_name: servedModel(policy, version),
          lora_path: await cache.localPath(snapshot, signal),
        };
        try {
          await postJson(`${root}/v1/load_lora_adapter`, body, http, signal);
        } catch (err) {
          // A retried try refused as a same-name reload means an earlier try did load it.
          if (!(err instanceof EngineRefusal)) throw err;
          if (!(await listedVersions(root, policy, signal)).includes(version)) throw withHint(err);
        }
      }
      for (const stale of listed.filter((v) => v !== version && v !== version - 1)) {
        const unload = { lora_name: servedModel(policy, stale) };
        // Best effort: a leftover is unloaded again after the next version's load.
        await postJson(`${root}/v1/unload_lora_adapter`, unload, http, signal).catch(() => undefined);
      }
    },
  };
}

function withHint(err: EngineRefusal): EngineRefusal {
  if (err.status !== 404) return err;
  return new EngineRefusal(
    404,
    `${err.message} (runtime LoRA loading is off: start vLLM with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora)`,
  );
}
