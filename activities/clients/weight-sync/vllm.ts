import { engineRoot } from '../../../config/server-url';
import {
  DEFAULT_HTTP_POLICY,
  EngineRefusal,
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
 * reload a name it has, so each version's weights get their own name: the target's model name filled in
 * (config/model-name.ts), `{run}/{policy}-v{N}-{digest}` when configured as `"{run}/{policy}-v{version}"`
 * (the digest prefix of the snapshot's weights, absent for snapshots from before digests), which is also the
 * model samplers ask for:
 *
 *   POST {root}/v1/load_lora_adapter   {"lora_name", "lora_path"}  -> 200 "Success: ..."
 *   POST {root}/v1/unload_lora_adapter {"lora_name"}
 *   GET  {root}/v1/models -> the adapters are listed by name
 *
 * The served version is the newest of the target's names listed, where version N counts only under the
 * target's exact name: an adapter of N with other weights (published again since) is not N, so the new
 * weights are loaded under their own name. After a load, the target's adapters other than the new one and
 * N-1's are unloaded (N-1 may still be finishing requests), best effort. With `{run}` in the name, several
 * runs share one server: each sees, loads and unloads only its own run's adapters.
 */
export function vllmAdapter(
  cache: SnapshotCache,
  http: HttpPolicy = DEFAULT_HTTP_POLICY,
  tokenFor: TokenFor = NO_TOKEN,
): WeightSyncAdapter {
  const templateOf = (target: SyncTarget): string => {
    const template = target.model ?? DEFAULT_MODEL;
    if (template.split('{version}').length !== 2) {
      throw nonRetryable(
        NON_RETRYABLE.invalidConfig,
        `model name "${template}" of policy "${target.snapshot.policy}": vLLM serves each version as an adapter ` +
          'of its own, so the name must contain {version} once (e.g. "{run}/{policy}-v{version}")',
      );
    }
    return template;
  };
  const ownerOf = (target: SyncTarget) => ({ run: target.run, policy: target.snapshot.policy });
  /** The adapter name of the target's snapshot. */
  const wantedName = (target: SyncTarget): string => {
    const { version, sha256 } = target.snapshot;
    return fillModelName(templateOf(target), ownerOf(target), version, sha256);
  };

  /** The target's adapters the server lists, with the version each names. */
  const listed = async (
    server: string,
    target: SyncTarget,
    signal?: AbortSignal,
  ): Promise<Array<{ name: string; version: number }>> => {
    const template = templateOf(target);
    return (await listModels(engineRoot(server), http, signal, tokenFor(server))).flatMap((m) => {
      const version = typeof m.id === 'string' ? versionNamed(template, ownerOf(target), m.id) : undefined;
      return version === undefined ? [] : [{ name: m.id as string, version }];
    });
  };

  return {
    engine: 'vllm',
    async servedVersion(server, target, signal) {
      const wanted = wantedName(target);
      const versions = (await listed(server, target, signal))
        .filter((a) => a.version !== target.snapshot.version || a.name === wanted)
        .map((a) => a.version);
      return versions.length === 0 ? undefined : Math.max(...versions);
    },
    async load(server, target, signal) {
      const root = engineRoot(server);
      const { snapshot } = target;
      const name = wantedName(target);
      const adapters = await listed(server, target, signal);
      if (!adapters.some((a) => a.name === name)) {
        const body = { lora_name: name, lora_path: await cache.localPath(snapshot, signal) };
        try {
          await postJson(`${root}/v1/load_lora_adapter`, body, http, signal, tokenFor(server));
        } catch (err) {
          // A retried try refused as a same-name reload means an earlier try did load it.
          if (!(err instanceof EngineRefusal)) throw err;
          if (!(await listed(server, target, signal)).some((a) => a.name === name)) throw withHint(err);
        }
      }
      for (const stale of adapters.filter((a) => a.name !== name && a.version !== snapshot.version - 1)) {
        const unload = { lora_name: stale.name };
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
