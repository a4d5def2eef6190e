import { z } from 'zod';
import { RUN_ID, type RunConfig } from '../config/schema';
import type { PolicyCommit } from './selfplay';

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

/** One benchmark's scores (activities/evaluation/scoring.ts). */
export interface BenchmarkResult {
  format: string;
  items: number;
  /** Samples per item. */
  n: number;
  /** Mean over items of the share of correct samples (the pass@1 estimate). */
  accuracy: number;
  /** Unbiased pass@k by k (k = 1, 2, 4, ..., n; empty when n = 1). */
  passAtK: Record<string, number>;
  /** Majority vote of the first k samples is correct, by k (the same k). */
  majAtK: Record<string, number>;
  /** Share of samples without a `\boxed{}` answer. */
  noAnswer: number;
  /** Items whose verdicts were read back from storage instead of sampled (a retried or repeated evaluation). */
  reusedItems: number;
  /** The per-item verdicts, JSONL: `runs/{runId}/eval/{policy}/v{N}/{benchmark}-{settings}/results-….jsonl.gz`. */
  resultsKey: string;
}

/** An evaluation of one policy version: what a manifest's `metrics.eval` holds. */
export interface EvalResult {
  policy: string;
  version: number;
  benchmarks: Record<string, BenchmarkResult>;
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
  runId: z.string().regex(RUN_ID, 'letters, digits, ".", "_" or "-" (max 128)'),
  iteration: z.number().int().min(0).optional(),
  config: z.record(z.string(), z.unknown()),
});
export type EvaluateCheckpointRequest = z.input<typeof evaluateCheckpointRequestSchema>;
