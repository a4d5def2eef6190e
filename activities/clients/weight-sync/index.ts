import type { HttpPolicy, TokenFor } from './http';
import { kernelAdapter } from './kernel';
import { sglangAdapter } from './sglang';
import { SnapshotCache } from './snapshot-cache';
import type { Engine, WeightSyncAdapter } from './types';
import { vllmAdapter } from './vllm';

export type { Engine, SnapshotRef, SyncTarget, WeightSyncAdapter } from './types';
export { DEFAULT_HTTP_POLICY, EngineRefusal, type HttpPolicy } from './http';
export { SnapshotCache, SnapshotUnavailable, type SnapshotCacheOptions } from './snapshot-cache';
export { syncServers, type ServerSync, type SyncOptions } from './sync';

export interface AdapterOptions {
  http?: HttpPolicy;
  /** Where s3:// snapshots are copied for vLLM and SGLang; one cache per process by default. */
  cache?: SnapshotCache;
  /** Each server's bearer token: the credential the worker binds to its URL (none by default). */
  tokenFor?: TokenFor;
  /**
   * Kernel samplers serve a copy of each snapshot even when their own policy is at its version, instead of
   * the live weights, which the next train step changes: a run that samples while it trains needs this.
   */
  pinKernelSnapshots?: boolean;
}

let sharedCache: SnapshotCache | undefined;

export function adapterFor(engine: Engine, options: AdapterOptions = {}): WeightSyncAdapter {
  const cache = (): SnapshotCache => options.cache ?? (sharedCache ??= new SnapshotCache());
  switch (engine) {
    case 'kernel':
      return kernelAdapter(options.http, options.tokenFor, options.pinKernelSnapshots);
    case 'vllm':
      return vllmAdapter(cache(), options.http, options.tokenFor);
    case 'sglang':
      return sglangAdapter(cache(), options.http, options.tokenFor);
  }
}
