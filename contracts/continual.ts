import { z } from 'zod';
import type { RunConfig } from '../config/schema';
import type { WeightSnapshot } from './selfplay';

/**
 * Messages of nightly continual training (version 1): the `continualTraining` input, the activities'
 * inputs and results, and its outcome. Only references (storage keys, run ids) and small numbers cross.
 */

const name = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'letters, digits, ".", "_" or "-" (max 64)');

/** The workflow's ONE plain-JSON argument, so a schedule (or the Web UI) can start it. */
export const continualInputSchema = z.strictObject({
  /** The lineage: a chain of runs, each resuming from the lineage's promoted checkpoint. */
  lineage: name,
  /** K: iterations each job trains. */
  iterations: z.number().int().positive().max(100_000),
  /** Held-out JSONL `{"question", "answer"}` per line (path or s3://), read by the rollout workers. */
  eval: z.string().min(1),
  /** The run config every job starts from (`{"recipe":"spice",...}`); runId, iterations and resumeFrom are set per job. */
  config: z.record(z.string(), z.unknown()),
});
export type ContinualInput = z.input<typeof continualInputSchema>;

/** A committed iteration of some run: what a lineage pointer names. */
export interface CheckpointRef {
  runId: string;
  iteration: number;
  /** The evaluated policy (a lineage trains one) and its version at that iteration. */
  policy: string;
  policyVersion: number;
  snapshot?: WeightSnapshot;
}

/** `lineages/{name}/promoted.json`: the checkpoint later jobs resume from, and the score that promoted it. */
export interface PromotedPointer extends CheckpointRef {
  score: number;
  jobId: string;
  evalKey: string;
}

export interface PrepareJobInput {
  lineage: string;
  jobId: string;
  /** The config's own resumeFrom: where a lineage with no run yet starts. */
  origin?: { runId: string; iteration?: number };
}

export interface PreparedJob {
  /** Where the job resumes: the promoted checkpoint, else the lineage's latest, else the origin; none: from scratch. */
  start?: CheckpointRef;
  promoted?: PromotedPointer;
  /** The job's frozen copy of the documents the lineage has used (for `corpus.excludeDocIds`). */
  excludeDocIdsUri: string;
  excludedDocuments: number;
}

export interface RecordRunInput {
  lineage: string;
  jobId: string;
  runId: string;
  /** The job's first iteration (the run's iterations before it belong to the run it resumed). */
  fromIteration: number;
}

export interface RecordedRun {
  /** The run's last committed iteration: the candidate for promotion. */
  candidate: CheckpointRef;
  /** Distinct documents the job's iterations planned from. */
  documents: number;
  /** Distinct documents the lineage has used, this job included. */
  lineageDocuments: number;
}

export interface EvaluateInput {
  lineage: string;
  jobId: string;
  label: 'baseline' | 'candidate';
  /** The job's resolved run config (endpoints, sampling, weight sync). */
  config: RunConfig;
  evalUri: string;
  /** The version to score (and its snapshot, loaded first when the run syncs weights). */
  checkpoint: Pick<CheckpointRef, 'policyVersion' | 'snapshot'>;
}

export interface EvaluationScore {
  label: 'baseline' | 'candidate';
  policyVersion: number;
  correct: number;
  total: number;
  /** correct / total. */
  score: number;
  /** Per-item verdicts, `lineages/{name}/jobs/{jobId}/eval-{label}-v{N}.jsonl.gz`. */
  resultsKey: string;
}

export interface FinishJobInput {
  lineage: string;
  outcome: ContinualOutcome;
  /** Set when the candidate won: written as the lineage's promoted pointer. */
  promote?: PromotedPointer;
}

/** What a job returns (and records under `lineages/{name}/jobs/{jobId}/record.json`). */
export interface ContinualOutcome {
  lineage: string;
  jobId: string;
  /** The checkpoint the job resumed from; absent when the lineage started from scratch. */
  startedFrom?: CheckpointRef;
  iterations: { from: number; to: number };
  candidate: EvaluationScore & { runId: string; iteration: number };
  baseline?: EvaluationScore & { runId?: string; iteration?: number };
  promoted: boolean;
  documents: number;
  lineageDocuments: number;
}
