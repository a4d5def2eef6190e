/**
 * The training kernel's HTTP contract, version 1. The update stage sends a batch by reference; the kernel
 * applies each idempotency key at most once and answers a repeated key with the first result. A kernel
 * process holds ONE policy (its name is given at start); a request naming another policy gets 404.
 *
 *   POST {url}/v1/train/step                    TrainStepRequest   -> 200 TrainStepResponse
 *   GET  {url}/v1/policies/{policy}                                 -> 200 PolicyState
 *   GET  {url}/v1/train/progress                                    -> 200 TrainProgress
 *   POST {url}/v1/policies/{policy}/checkpoint  CheckpointRequest  -> 200 CheckpointResponse
 *   POST {url}/v1/policies/{policy}/restore     RestoreRequest     -> 200 PolicyState
 *   POST {url}/v1/policies/{policy}/publish     PublishRequest     -> 200 PublishResponse
 *
 * URIs are `file:///abs/dir` (or a plain absolute path) or `s3://bucket/prefix` (S3_ENDPOINT and AWS_*
 * from the kernel's environment). A checkpoint or snapshot is a directory-like prefix that is complete only
 * when its `COMPLETE` marker object exists (written last), so a crash mid-save never leaves a loadable half.
 *
 * Errors are JSON `{ "error": { "type": string, "message": string } }`: 4xx for requests that cannot succeed
 * (malformed batch, unknown policy, version conflict), 5xx for failures worth retrying. A step is all or
 * nothing: one that fails is rolled back (500, retried), or, where the kernel keeps no copy to undo it with,
 * leaves the policy dirty, refusing steps, checkpoints and publishes with 409 `policy_dirty` until a restore.
 *
 * Weights have an identity: the kernel records the run lineage whose steps made them (`runId` of the steps,
 * `lineage` of a restore) and refuses with 409 `lineage_conflict` a step or restore of another run (a rollback
 * lineage `{run}.r{n}` counts as its run), so two runs pointed at one kernel never train on each other's weights.
 */

/** The object a checkpoint or snapshot's save writes last: without it the prefix holds no loadable save. */
export const COMPLETE_MARKER = 'COMPLETE';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** Token ids the model sampled, as the engine returned them: the kernel trains on them as they are. */
export interface SampledSegment {
  ids: number[];
}

/** Text the environment wrote between sampled turns (a tool's observation): tokenized by the kernel, out of the loss. */
export interface InsertedSegment {
  text: string;
}

/**
 * One trajectory of a training batch: a JSONL line of the batch object.
 *
 * Token in, token out: when the engine returned the sampled token ids, `completionTokens` carries them and
 * the kernel trains on exactly those tokens (the prompt is the chat template's rendering of `messages`, as the
 * engine's was); `completion` is then for people and logs. Without it the kernel tokenizes `completion` (the
 * fallback for engines that return no ids), which can give other tokens than were sampled (merges across
 * the prompt boundary, non-canonical splits), and the step's `rowsRetokenized` counts it.
 */
export interface TrainingRow {
  messages: ChatMessage[];
  completion: string;
  /** The recipe role that produced the completion, e.g. `challenger` or `reasoner`. */
  role: string;
  /** The advantage group, e.g. `challenger/doc-0017`. */
  group: string;
  reward: number;
  advantage: number;
  /**
   * Behaviour-policy log-probabilities of the completion's tokens, when the sampler returned them. With
   * `completionTokens`: exactly one per sampled id, in order (the kernel's 400 says otherwise); without: one
   * per token of the kernel's tokenization of `completion`, with or without the EOS token's.
   */
  behaviourLogprobs?: number[];
  /**
   * Spans of the completion excluded from the loss (e.g. retrieved text), [start, end), counted in Unicode
   * code points (Python string indices, not JavaScript's UTF-16 units: use `[...text]` to count). Used only
   * without `completionTokens`, whose inserted segments are the masked part.
   */
  lossMaskSpans?: Array<[number, number]>;
  /**
   * The completion as sampled, in order: the model's turns as token ids (in the loss), the environment's text
   * between them (out of the loss). The kernel appends EOS unless the last sampled id is an end-of-sequence
   * id. Ids must be of the kernel's tokenizer: one outside its vocabulary is refused (400).
   */
  completionTokens?: Array<SampledSegment | InsertedSegment>;
  /**
   * The temperature (> 0) the completion was sampled at. The kernel takes every log-prob of the row of
   * softmax(logits / temperature), the distribution it was drawn from, as verl does and as the samplers report
   * `behaviourLogprobs` (the kernel's and SGLang's by default, vLLM's with `--logprobs-mode processed_logprobs`),
   * so the PPO ratio is 1 on policy. Absent: 1, which is also how a greedy sample (temperature 0) is scored,
   * since every engine reports its log-probs at 1. Sent only when not 1, so a kernel from before the field still
   * takes the batches of runs sampled at 1.
   */
  temperature?: number;
  /**
   * The top-p (0 < topP ≤ 1) it was sampled with; absent: 1, and sent only when not 1. Recorded, not applied:
   * the log-probs are of the tempered distribution before the nucleus truncation, as verl's are.
   */
  topP?: number;
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
  /**
   * Dual-clip (verl's `clip_ratio_c`, > 1, ppo_clip only): for a negative advantage the token's loss is capped
   * at -dualClip × A, so a stale row's huge ratio cannot dominate. Absent: off.
   */
  dualClip?: number;
  /** An upper bound on each token's k3 KL value (verl clamps to 10), with no gradient beyond. Absent: none. */
  k3Clamp?: number;
  /**
   * The off-policy correction. `ppo_ratio` (absent): the PPO ratio to the behaviour log-probs. `tis`: the
   * ratio to the kernel's own log-probs of the batch at the step's start (π_old), each token weighted by the
   * truncated importance weight min(π_old / μ, importanceCap), μ the behaviour log-prob.
   */
  offPolicy?: 'ppo_ratio' | 'tis';
  /** C of `tis` (≥ 1; the kernel's default 2). */
  importanceCap?: number;
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
  /** Per role, the optimizer steps whose mini-batch held its rows: with `update.roleOrder`, its own phase's. */
  stepsByRole?: Record<string, number>;
  /** Per role, the first of those steps (1-based): the order the roles were updated in. */
  firstStepByRole?: Record<string, number>;
  /** Per role, its loss tokens. */
  tokensByRole?: Record<string, number>;
  /** Per role, the mean gradient norm (before clipping) of the steps that held its rows. */
  gradNormByRole?: Record<string, number>;
  /** Mini-batches whose loss or gradient was not finite, skipped without changing the weights. */
  skippedSteps?: number;
  /** Loss tokens where dual-clip capped the loss, as a fraction of all loss tokens. */
  dualClipFraction?: number;
  /**
   * Importance weights over the loss tokens with a behaviour log-prob: under `ppo_ratio` the ratio π/μ the
   * clip sees ("truncated": outside the clip range), under `tis` the raw π_old/μ (truncated: above the cap).
   */
  importanceWeightMean?: number;
  importanceWeightMax?: number;
  importanceWeightTruncatedFraction?: number;
  /** Rows trained on the kernel's tokenization of their text (no `completionTokens`), and the share that were not. */
  rowsRetokenized?: number;
  tokenExactFraction?: number;
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

/**
 * How far the running step has got (answered beside it, never behind it). Rows count once per mini-batch they
 * are trained in, so `rowsTrained` ends at `rows` (the batch's rows times the epochs); both counts are 0 until
 * the kernel has read the batch. `step` is null while no step runs.
 */
export interface TrainProgress {
  policy: string;
  step: {
    idempotencyKey: string;
    miniBatches: number;
    miniBatchesDone: number;
    rows: number;
    rowsTrained: number;
  } | null;
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
