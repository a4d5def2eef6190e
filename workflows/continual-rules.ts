/**
 * The pure rules of a continual-training lineage, shared by the workflow and its tests (deterministic: no
 * I/O, no clocks).
 */

/**
 * Whether a job's checkpoint replaces the promoted one: only a strictly better held-out score does. A tie
 * keeps the promoted checkpoint (an equal score is no evidence of progress, and keeping it avoids churn).
 * Without a baseline score (nothing promoted and the start could not be served) the candidate is promoted.
 */
export function shouldPromote(candidate: number, baseline: number | undefined): boolean {
  return baseline === undefined || candidate > baseline;
}

/**
 * The run id of one job: the lineage, the action time (the schedule's scheduled time, else the workflow's
 * start) to the second, and the head of the Temporal run id so that two manual starts in the same second
 * differ. All three come from the workflow's history, so a replay derives the same id.
 */
export function jobRunId(lineage: string, actionTime: Date, temporalRunId: string): string {
  const stamp = actionTime
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replace(/[-:]/g, '');
  return `${lineage}-${stamp}-${temporalRunId.slice(0, 8)}`;
}
