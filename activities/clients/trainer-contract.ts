/**
 * The training kernel's HTTP contract, version 1. Its types are generated from the kernel's pydantic models
 * (kernel-api.generated.ts, `npm run gen:kernel-contract`; docs/architecture.md says how to change them) and
 * re-exported here under the names the callers use. The update stage sends a batch by reference; the kernel
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

export type {
  BatchRef,
  ChatMessage,
  CheckpointRequest,
  CheckpointResponse,
  InsertedText as InsertedSegment,
  LossSpec,
  OptimizerSpec,
  PolicyState,
  PublishRequest,
  PublishResponse,
  RestoreRequest,
  SampledTokens as SampledSegment,
  StepProgress,
  TrainerError,
  TrainingRow,
  TrainProgress,
  TrainStepMetrics,
  TrainStepRequest,
  TrainStepResponse,
  UpdateSpec,
} from './kernel-api.generated';
