/**
 * Weight sync: after the kernel publishes sampler snapshot version N, every inference server must serve N
 * (verified by reading it back) before the next iteration samples, or leave the pool. One adapter per
 * engine speaks that engine's runtime weight-update API.
 */

export type Engine = 'kernel' | 'vllm' | 'sglang';

/** A published sampler snapshot (see `PublishRequest` in trainer-contract.ts). */
export interface SnapshotRef {
  policy: string;
  version: number;
  /** `s3://bucket/prefix`, `file:///abs/dir` or a path; complete only once its `COMPLETE` marker exists. */
  uri: string;
  /** A PEFT LoRA adapter directory, or a full Hugging Face model directory. */
  format: 'lora' | 'full';
  /** The digest of its weights (`WeightSnapshot.sha256`); absent for snapshots published before digests. */
  sha256?: string;
}

/**
 * What a sync brings a server to: a snapshot, served for one run. Two runs may publish the same policy name
 * and version numbers (a fork inherits its parent's config), so the run is part of what is served.
 */
export interface SyncTarget {
  snapshot: SnapshotRef;
  /** The run that samples it (its rollback lineages `{run}.r{n}` are the run); undefined: a config without runId. */
  run?: string;
  /**
   * The model name its samplers request, placeholders unfilled (config/model-name.ts): vLLM loads each
   * version's adapter under it. Default `{policy}-v{version}`.
   */
  model?: string;
}

export interface WeightSyncAdapter {
  readonly engine: Engine;
  /**
   * The version of the target's policy the server serves for the target's run now, or undefined when it
   * reports none (fresh or unknown). Throws non-retryably when the server holds another run's weights that
   * a load would replace (an engine serving one model per process cannot serve two runs).
   */
  servedVersion(server: string, target: SyncTarget, signal?: AbortSignal): Promise<number | undefined>;
  /** Asks the server to serve the snapshot; resolving means the server accepted, not that it serves it. */
  load(server: string, target: SyncTarget, signal?: AbortSignal): Promise<void>;
}
