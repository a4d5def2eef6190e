/**
 * The training kernel's HTTP contract, version 1. The update stage sends a batch by reference; the kernel
 * applies each idempotency key at most once and answers a repeated key with the first result. A kernel
 * process holds ONE policy (its name is given at start); a request naming another policy gets 404.
 *
 *   POST {url}/v1/train/step                    TrainStepRequest   -> 200 TrainStepResponse
 *   GET  {url}/v1/policies/{policy}                                 -> 200 PolicyState
 *   POST {url}/v1/policies/{policy}/checkpoint  CheckpointRequest  -> 200 CheckpointResponse
 *   POST {url}/v1/policies/{policy}/restore     RestoreRequest     -> 200 PolicyState
 *   POST {url}/v1/policies/{policy}/publish     PublishRequest     -> 200 PublishResponse
 *
 * URIs are `file:///abs/dir` (or a plain absolute path) or `s3://bucket/prefix` (S3_ENDPOINT and AWS_*
 * from the kernel's environment). A checkpoint or snapshot is a directory-like prefix that is complete only
 * when its `COMPLETE` marker object exists (written last), so a crash mid-save never leaves a loadable half.
 *
 * Errors are JSON `{ "error": { "type": string, "message": string } }`: 4xx for requests that cannot succeed
 * (malformed batch, unknown policy, version conflict), 5xx for failures worth retrying.
 *
 * Weights have an identity: the kernel records the run lineage whose steps made them (`runId` of the steps,
 * `lineage` of a restore) and refuses with 409 `lineage_conflict` a step or restore of another run (a rollback
 * lineage `{run}.r{n}` counts as its run), so two runs pointed at one kernel never train on each other's weights.
 */

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** One trajectory of a training batch: a JSONL line of the batch object. */
export interface TrainingRow {
  messages: ChatMessage[];
  completion: string;
  /** The recipe role that produced the completion, e.g. `challenger` or `reasoner`. */
  role: string;
  /** The advantage group, e.g. `challenger/doc-0017`. */
  group: string;
  reward: number;
  advantage: number;
  /** Behaviour-policy log-probabilities of the completion's tokens, when the sampler returned them. */
  behaviourLogprobs?: number[];
  /**
   * Spans of the completion excluded from the loss (e.g. retrieved text), [start, end), counted in Unicode
   * code points (Python string indices, not JavaScript's UTF-16 units: use `[...text]` to count).
   */
  lossMaskSpans?: Array<[number, number]>;
}

export interface LossSpec {
  /** PPO-clip surrogate on the ratio to behaviour log-probs, or plain REINFORCE. */
  type: 'ppo_clip' | 'reinforce';
  /** dr_grpo: token sum / constant; token_mean: GRPO's mean over tokens; sequence_mean: mean per sequence. */
  normalization: 'dr_grpo' | 'token_mean' | 'sequence_mean';
  /** Dr.GRPO's constant (the generation length budget). */
  normalizerConstant: number;
  clipLow: number;
  clipHigh: number;
  klCoef: number;
  /**
   * Weight of the entropy bonus: the loss subtracts entropyCoef times each loss token's next-token entropy.
   * Absent or 0 turns it off (the entropy is still measured). Sent only when positive, so a kernel from
   * before the field still takes every other run's steps.
   */
  entropyCoef?: number;
}

export interface OptimizerSpec {
  learningRate: number;
  schedule: 'constant' | 'warmup_constant';
  warmupSteps: number;
  maxGradNorm: number;
  weightDecay: number;
}

/**
 * How the batch becomes optimizer steps, all of one policy version (the kernel's minibatch.py). Absent: one
 * step over the whole batch.
 */
export interface UpdateSpec {
  /** Prompts per optimizer step, each with all its rows; absent: every prompt (of a role phase) in one step. */
  miniBatchPrompts?: number;
  /** Passes over the batch. */
  epochs: number;
  /** Roles updated in turn, each its own steps; the unlisted roles' rows last, together. */
  roleOrder: string[];
}

export interface TrainStepRequest {
  /** `{runId}/iter-{n}/{policy}`: the kernel applies it at most once. */
  idempotencyKey: string;
  runId: string;
  iteration: number;
  policy: string;
  /** The policy version the batch was sampled from; the kernel refuses a batch for another version (409). */
  baseVersion: number;
  batch: { uri: string; rows: number; sha256: string };
  loss: LossSpec;
  optimizer: OptimizerSpec;
  update?: UpdateSpec;
}

export interface TrainStepMetrics {
  loss: number;
  kl: number;
  clipFraction: number;
  gradNorm: number;
  tokens: number;
  seconds: number;
  /** Mean next-token entropy (nats) over the loss tokens, when the trainer measures it (the kernel does). */
  entropy?: number;
  /** The same per row role: a role collapsing onto a few answers shows here first. */
  entropyByRole?: Record<string, number>;
  /** Optimizer steps taken (one per mini-batch and epoch); kernels before mini-batches report none. */
  optimizerSteps?: number;
  /** Mini-batches whose loss or gradient was not finite, skipped without changing the weights. */
  skippedSteps?: number;
}

export interface TrainStepResponse {
  idempotencyKey: string;
  /** False when the key had been applied before and this is the first result again. */
  applied: boolean;
  /** The policy version after the step. */
  policyVersion: number;
  metrics: TrainStepMetrics;
}

export interface PolicyState {
  policy: string;
  policyVersion: number;
  /** The run lineage whose weights the kernel holds; null for base weights (kernels before lineages: absent). */
  lineage?: string | null;
}

export interface TrainerError {
  error: { type: string; message: string };
}

/** Saves weights, optimizer state, step, version and RNG state. Idempotent: a complete checkpoint at `uri`
 * for the same version is left as it is and described again. */
export interface CheckpointRequest {
  uri: string;
  /** The version the caller expects to save (409 when the kernel is at another); a complete checkpoint at
   * `uri` of another version or another run's lineage is refused (409 `checkpoint_conflict`). */
  version?: number;
}

export interface CheckpointResponse {
  uri: string;
  policyVersion: number;
  bytes: number;
}

/** Loads a complete checkpoint: afterwards the kernel is exactly at the checkpoint's version. */
export interface RestoreRequest {
  uri: string;
  /** The run lineage taking the weights; default: the checkpoint's own. */
  lineage?: string;
}

/**
 * Writes a sampler snapshot of the CURRENT weights, which must be at `version` (else 409): a PEFT adapter
 * directory for LoRA policies (loadable by vLLM `/v1/load_lora_adapter`), or a full Hugging Face model
 * directory with tokenizer (loadable by SGLang `/update_weights_from_disk` and the kernel's sampler).
 * Idempotent like checkpoints.
 */
export interface PublishRequest {
  uri: string;
  version: number;
}

export interface PublishResponse {
  uri: string;
  policyVersion: number;
  format: 'lora' | 'full';
}
