import { z } from 'zod';
import { RUN_ID, RUN_ID_RULE, type RunConfig } from '../config/schema';
import type { EvalResult } from './eval-result';
import type { PolicyCommit } from './selfplay';

export type { BenchmarkResult, EvalResult } from './eval-result';

/**
 * Messages of held-out evaluation (version 1): the evaluation activity's input and result, which a run's
 * iterations and the `evaluateCheckpoint` workflow share. Only keys and a few numbers per benchmark cross.
 */

export interface EvaluateCheckpointInput {
  /** The storage id the version belongs to: the run, or its lineage after a rollback (`{runId}.r1`). */
  runId: string;
  /** The run's config: endpoints, weight sync, and the `evaluation` section (benchmarks and sampling). */
  config: RunConfig;
  /** The evaluated policy (config/policies.ts `evaluatedPolicy`) as committed: its version and snapshot. */
  policy: string;
  committed: PolicyCommit;
}

/** Where `evaluateCheckpoint` found the version to evaluate. */
export interface CheckpointToEvaluate {
  /** The storage id holding the iteration (the run, or the lineage that kept it). */
  runId: string;
  iteration: number;
  policy: string;
  committed: PolicyCommit;
}

export interface EvaluateCheckpointOutcome extends CheckpointToEvaluate {
  result: EvalResult;
}

/**
 * The `evaluateCheckpoint` workflow's ONE plain-JSON argument (so the Web UI can start it too): a run's
 * committed iteration (the latest when absent; 0 for the base weights) evaluated with the run's config,
 * whose `evaluation` section names the benchmarks and the sampling. A lineage id (`run.r1`) is a run id too.
 */
export const evaluateCheckpointRequestSchema = z.strictObject({
  runId: z.string().regex(RUN_ID, RUN_ID_RULE),
  iteration: z.number().int().min(0).optional(),
  config: z.record(z.string(), z.unknown()),
});
export type EvaluateCheckpointRequest = z.input<typeof evaluateCheckpointRequestSchema>;
