import { ApplicationFailure } from '@temporalio/common';
import { NON_RETRYABLE, nonRetryable } from '../../lib/errors';
import { EngineRefusal, errorMessage } from './http';
import { SnapshotUnavailable } from './snapshot-cache';
import type { Engine, SnapshotRef, SyncTarget, WeightSyncAdapter } from './types';

export interface SyncOptions {
  /** Loads sent to one server before it counts as failed. */
  attempts: number;
  /** Deadline for one server's whole sync (reads, snapshot copy, loads): a hung server fails alone. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** The run that samples the snapshot (`SyncTarget.run`). */
  run?: string;
  /** The model name its samplers request, placeholders unfilled (`SyncTarget.model`). */
  model?: string;
}

export interface ServerSync {
  server: string;
  ok: boolean;
  /** The version the server last reported, when it reported one. */
  version?: number;
  /** Why the server is not serving the snapshot, for the person reading the run's log. */
  reason?: string;
}

/** The snapshot format an engine's runtime update cannot load, and what to do instead. */
const FORMAT_MISMATCH: Partial<Record<Engine, { format: SnapshotRef['format']; advice: string }>> = {
  vllm: {
    format: 'full',
    advice:
      'vLLM weight sync hot-loads LoRA adapters only (/v1/load_lora_adapter): train the policy with LoRA, or serve it with sglang or the kernel sampler',
  },
  sglang: {
    format: 'lora',
    advice:
      'SGLang weight sync reloads full models from disk (/update_weights_from_disk): serve LoRA policies with vllm or the kernel sampler',
  },
};

/**
 * Brings every server to the snapshot's version and verifies it by reading the version back. A server that
 * is already there gets no load. A server that cannot be brought there (refusal, stale after every load,
 * unreachable, past its deadline) is reported `ok: false` with the reason, and the others go on; the caller
 * takes it out of the pool. Throws only for what no server can fix: a configuration error, a snapshot that
 * is incomplete or cannot be fetched, or the caller's own cancellation.
 */
export async function syncServers(
  adapter: WeightSyncAdapter,
  servers: string[],
  snapshot: SnapshotRef,
  options: SyncOptions,
): Promise<ServerSync[]> {
  checkRequest(adapter.engine, snapshot, options);
  const target: SyncTarget = {
    snapshot,
    ...(options.run === undefined ? {} : { run: options.run }),
    ...(options.model === undefined ? {} : { model: options.model }),
  };
  return Promise.all(servers.map((server) => syncServer(adapter, server, target, options)));
}

async function syncServer(
  adapter: WeightSyncAdapter,
  server: string,
  target: SyncTarget,
  options: SyncOptions,
): Promise<ServerSync> {
  const { snapshot } = target;
  const deadline = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  const wanted = snapshot.version;
  const failed = (version: number | undefined, why: string): ServerSync => ({
    server,
    ok: false,
    ...(version === undefined ? {} : { version }),
    reason: `${adapter.engine} server ${server}: ${why}`,
  });
  let version: number | undefined;
  let loadError: string | undefined;
  try {
    for (let loads = 0; ; loads++) {
      version = await adapter.servedVersion(server, target, signal);
      if (version === wanted) return { server, ok: true, version };
      if (loads === options.attempts) {
        const after = `still serves ${versionText(version)} after ${loads} load(s) of version ${wanted} (${snapshot.uri})`;
        return failed(
          version,
          loadError
            ? `${after}; last load error: ${loadError}`
            : `${after}, each accepted by the server: check its log`,
        );
      }
      try {
        await adapter.load(server, target, signal);
        loadError = undefined;
      } catch (err) {
        // Transient failures (already retried with backoff) get another attempt; refusals do not.
        if (err instanceof EngineRefusal || isRunLevel(err) || signal.aborted) throw err;
        loadError = errorMessage(err);
      }
    }
  } catch (err) {
    if (isRunLevel(err) || options.signal?.aborted) throw err;
    if (deadline.aborted) {
      return failed(
        version,
        `not verified at version ${wanted} within its ${options.timeoutMs} ms deadline (${errorMessage(err)})`,
      );
    }
    return failed(version, err instanceof EngineRefusal ? `refused: ${err.message}` : errorMessage(err));
  }
}

function checkRequest(engine: Engine, snapshot: SnapshotRef, options: SyncOptions): void {
  const mismatch = FORMAT_MISMATCH[engine];
  if (mismatch?.format === snapshot.format) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `policy ${snapshot.policy} publishes ${snapshot.format === 'lora' ? 'LoRA adapters' : 'full models'}, ` +
        `but ${mismatch.advice}`,
    );
  }
  if (!Number.isSafeInteger(snapshot.version) || snapshot.version < 0) {
    throw nonRetryable(
      NON_RETRYABLE.invalidInput,
      `snapshot version ${snapshot.version} is not a version number`,
    );
  }
  if (!Number.isSafeInteger(options.attempts) || options.attempts < 1 || !(options.timeoutMs > 0)) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `weight sync needs attempts >= 1 and timeoutMs > 0 (got ${options.attempts}, ${options.timeoutMs})`,
    );
  }
}

/** Failures that are about the run, not about one server. */
function isRunLevel(err: unknown): boolean {
  return (err instanceof ApplicationFailure && err.nonRetryable) || err instanceof SnapshotUnavailable;
}

const versionText = (version: number | undefined): string =>
  version === undefined ? 'no version' : `version ${version}`;
