import {
  DEFAULT_HTTP_POLICY,
  EngineRefusal,
  engineRoot,
  listModels,
  NO_TOKEN,
  postJson,
  type HttpPolicy,
  type TokenFor,
} from './http';
import { fillModelName, versionNamed } from '../../../config/model-name';
import { NON_RETRYABLE, nonRetryable } from '../../lib/errors';
import type { SnapshotCache } from './snapshot-cache';
import type { SyncTarget, WeightSyncAdapter } from './types';

/**
 * vLLM with runtime LoRA (`VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`, `--enable-lora`). vLLM refuses to
 * reload a name it has, so each version gets its own name: the target's model name filled in
 * (config/model-name.ts), `{run}/{policy}-v{N}` when configured as `"{run}/{policy}-v{version}"`, which is
 * also the model samplers ask for:
 *
 *   POST {root}/v1/load_lora_adapter   {"lora_name", "lora_path"}  -> 200 "Success: ..."
 *   POST {root}/v1/unload_lora_adapter {"lora_name"}
 *   GET  {root}/v1/models -> the adapters are listed by name
 *
 * The served version is the newest of the target's names listed. After a load, the target's adapters other
 * than N and N-1 are unloaded (N-1 may still be finishing requests), best effort. With `{run}` in the name,
 * several runs share one server: each sees, loads and unloads only its own run's adapters.
 */
export function vllmAdapter(
  cache: SnapshotCache,
  http: HttpPolicy = DEFAULT_HTTP_POLICY,
  tokenFor: TokenFor = NO_TOKEN,
): WeightSyncAdapter {
  const named = (target: SyncTarget) => {
    const template = target.model ?? DEFAULT_MODEL;
    if (template.split('{version}').length !== 2) {
      throw nonRetryable(
        NON_RETRYABLE.invalidConfig,
        `model name "${template}" of policy "${target.snapshot.policy}": vLLM serves each version as an adapter ` +
          'of its own, so the name must contain {version} once (e.g. "{run}/{policy}-v{version}")',
      );
    }
    const owner = { run: target.run, policy: target.snapshot.policy };
    return {
      name: (version: number) => fillModelName(template, owner, version),
      version: (id: string) => versionNamed(template, owner, id),
    };
  };

  const listedVersions = async (
    server: string,
    target: SyncTarget,
    signal?: AbortSignal,
  ): Promise<number[]> => {
    const { version } = named(target);
    return (await listModels(engineRoot(server), http, signal, tokenFor(server)))
      .map((m) => (typeof m.id === 'string' ? version(m.id) : undefined))
      .filter((v): v is number => v !== undefined);
  };

  return {
    engine: 'vllm',
    async servedVersion(server, target, signal) {
      const versions = await listedVersions(server, target, signal);
      return versions.length === 0 ? undefined : Math.max(...versions);
    },
    async load(server, target, signal) {
      const root = engineRoot(server);
      const { snapshot } = target;
      const { name } = named(target);
      const listed = await listedVersions(server, target, signal);
      if (!listed.includes(snapshot.version)) {
        const body = {
          lora_name: name(snapshot.version),
          lora_path: await cache.localPath(snapshot, signal),
        };
        try {
          await postJson(`${root}/v1/load_lora_adapter`, body, http, signal, tokenFor(server));
        } catch (err) {
          // A retried try refused as a same-name reload means an earlier try did load it.
          if (!(err instanceof EngineRefusal)) throw err;
          if (!(await listedVersions(server, target, signal)).includes(snapshot.version)) throw withHint(err);
        }
      }
      for (const stale of listed.filter((v) => v !== snapshot.version && v !== snapshot.version - 1)) {
        const unload = { lora_name: name(stale) };
        // Best effort: a leftover is unloaded again after the next version's load.
        await postJson(`${root}/v1/unload_lora_adapter`, unload, http, signal, tokenFor(server)).catch(
          () => undefined,
        );
      }
    },
  };
}

/** The adapter names of a target that names no model: those of configs from before run-scoped names. */
const DEFAULT_MODEL = '{policy}-v{version}';

function withHint(err: EngineRefusal): EngineRefusal {
  if (err.status !== 404) return err;
  return new EngineRefusal(
    404,
    `${err.message} (runtime LoRA loading is off: start vLLM with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora)`,
  );
}
