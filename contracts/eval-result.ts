/**
 * What a held-out evaluation reports (version 1): per benchmark, the scores and where the per-item verdicts
 * are stored. A manifest's `metrics.eval` holds an EvalResult; kept apart from the evaluation messages so the
 * manifest's contract does not depend on them.
 */

/** One benchmark's scores (activities/evaluation/scoring.ts). */
export interface BenchmarkResult {
  format: string;
  items: number;
  /** Samples per item. */
  n: number;
  /** Mean over items of the share of correct samples (the pass@1 estimate). */
  accuracy: number;
  /**
   * The accuracy's standard error over the samples of these items (activities/evaluation/scoring.ts
   * `samplingError`); absent in results from before it was measured.
   */
  standardError?: number;
  /** Unbiased pass@k by k (k = 1, 2, 4, ..., n; empty when n = 1). */
  passAtK: Record<string, number>;
  /** Majority vote of the first k samples is correct, by k (the same k). */
  majAtK: Record<string, number>;
  /** Share of samples without a `\boxed{}` answer (an agentic evaluation's: without a final `<answer>`). */
  noAnswer: number;
  /** Agentic evaluation (`evaluation.rollout: "search"`): the mean number of searches a sample made. */
  searchesPerAnswer?: number;
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
