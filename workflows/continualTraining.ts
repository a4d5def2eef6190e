import { executeChild, workflowInfo } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { resolveRunConfig, type RunConfig } from '../config/schema';
import { poolActivities } from './activity-options';
import {
  continualInputSchema,
  type CheckpointRef,
  type ContinualOutcome,
  type EvaluationScore,
  type PreparedJob,
} from '../contracts/continual';
import { jobRunId, shouldPromote } from './continual-rules';
import { selfPlayRun } from './selfPlayRun';
import { invalidInput } from './invalid-input';

/** Set by the server on every workflow a schedule starts: the action's scheduled time. */
const SCHEDULED_START = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

/**
 * One night of continual training for a lineage (a schedule's action; also startable from the Web UI with
 * `{"lineage":"nightly","iterations":4,"eval":"s3://bucket/heldout.jsonl","config":{"recipe":"spice"}}`):
 * resume from the lineage's promoted (else latest) checkpoint, train K iterations as a child `selfPlayRun`
 * on documents the lineage has not used, record the documents used, score the new checkpoint and the
 * promoted one on the held-out set, and promote the new one only if it scores strictly higher. Any failing
 * step fails the workflow, so a schedule with pause-on-failure stops until someone looks.
 */
export async function continualTraining(input: unknown): Promise<ContinualOutcome> {
  const parsed = continualInputSchema.safeParse(input);
  if (!parsed.success) {
    throw invalid(parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`));
  }
  const { lineage, iterations: k, eval: evalUri } = parsed.data;
  const base = resolveRunConfig(parsed.data.config);
  if (!base.ok) throw invalid(base.problems.map((p) => `config.${p}`));

  const info = workflowInfo();
  const jobId = jobRunId(
    lineage,
    info.typedSearchAttributes.get(SCHEDULED_START) ?? info.startTime,
    info.runId,
  );
  const origin = base.config.resumeFrom;
  const prepared = await poolActivities(base.config).orchestrator.prepareLineageJob({
    lineage,
    jobId,
    ...(origin ? { origin } : {}),
  });
  const from = (prepared.start?.iteration ?? 0) + 1;
  const { input: runInput, config } = jobConfig(parsed.data.config, jobId, from + k - 1, prepared);
  const { orchestrator, rollout } = poolActivities(config);

  await executeChild(selfPlayRun, {
    workflowId: jobId,
    taskQueue: config.pools.orchestrator,
    args: [runInput],
  });
  const recorded = await orchestrator.recordLineageRun({ lineage, jobId, runId: jobId, fromIteration: from });

  // The baseline first: with weight sync the servers end the job at the candidate's version.
  const reference = prepared.promoted ?? prepared.start;
  const servable = config.weightSync.engine === 'none' || reference?.snapshot !== undefined;
  const evaluate = (label: EvaluationScore['label'], at: Pick<CheckpointRef, 'policyVersion' | 'snapshot'>) =>
    rollout.evaluatePolicy({
      lineage,
      jobId,
      label,
      config,
      evalUri,
      checkpoint: { policyVersion: at.policyVersion, ...(at.snapshot ? { snapshot: at.snapshot } : {}) },
    });
  const baseline = servable ? await evaluate('baseline', reference ?? { policyVersion: 0 }) : undefined;
  const candidate = await evaluate('candidate', recorded.candidate);
  const promoted = shouldPromote(candidate.score, baseline?.score);

  const outcome: ContinualOutcome = {
    lineage,
    jobId,
    ...(prepared.start ? { startedFrom: prepared.start } : {}),
    iterations: { from, to: recorded.candidate.iteration },
    candidate: { ...candidate, runId: jobId, iteration: recorded.candidate.iteration },
    ...(baseline
      ? {
          baseline: {
            ...baseline,
            ...(reference ? { runId: reference.runId, iteration: reference.iteration } : {}),
          },
        }
      : {}),
    promoted,
    documents: recorded.documents,
    lineageDocuments: recorded.lineageDocuments,
  };
  await orchestrator.finishLineageJob({
    lineage,
    outcome,
    ...(promoted
      ? {
          promote: {
            ...recorded.candidate,
            score: candidate.score,
            jobId,
            evalKey: candidate.resultsKey,
          },
        }
      : {}),
  });
  return outcome;
}

/**
 * The job's run input (the schedule's config with its own run id, K more iterations, the resume point and
 * the lineage's used documents excluded), and the same resolved: validated here, so a bad config fails
 * before anything runs.
 */
function jobConfig(
  raw: Record<string, unknown>,
  runId: string,
  iterations: number,
  prepared: PreparedJob,
): { input: Record<string, unknown>; config: RunConfig } {
  const corpus = typeof raw.corpus === 'object' && raw.corpus !== null ? raw.corpus : {};
  const { start } = prepared;
  const input = {
    ...raw,
    runId,
    iterations,
    corpus: { ...corpus, excludeDocIds: prepared.excludeDocIdsUri },
    ...(start ? { resumeFrom: { runId: start.runId, iteration: start.iteration } } : {}),
  };
  const resolved = resolveRunConfig(input);
  if (!resolved.ok) throw invalid(resolved.problems.map((p) => `config.${p}`));
  return { input, config: resolved.config };
}

const invalid = (problems: string[]) => invalidInput('continualTraining', problems);
