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
}

export interface WeightSyncAdapter {
  readonly engine: Engine;
  /** The policy version the server serves now, or undefined when it reports none (fresh or unknown). */
  servedVersion(server: string, policy: string, signal?: AbortSignal): Promise<number | undefined>;
  /** Asks the server to serve the snapshot; resolving means the server accepted, not that it serves it. */
  load(server: string, snapshot: SnapshotRef, signal?: AbortSignal): Promise<void>;
  /** The model name samplers must request to get this version. */
  servedModel(policy: string, version: number): string;
}
