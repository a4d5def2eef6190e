/**
 * The storage layout of continual-training lineages, beside `runs/` (see clients/storage/keys.ts):
 *
 *   lineages/{name}/promoted.json                        the promoted checkpoint (runId, iteration, score)
 *   lineages/{name}/latest.json                          the last job's last committed checkpoint
 *   lineages/{name}/used-docs.json                       every document id a job of the lineage planned from
 *   lineages/{name}/jobs/{jobId}/exclude-docs.json       the used set as the job started (its corpus exclusion)
 *   lineages/{name}/jobs/{jobId}/docs.json               the document ids this job's iterations planned from
 *   lineages/{name}/jobs/{jobId}/eval-{label}-v000042.jsonl.gz   per-item verdicts of one evaluation
 *   lineages/{name}/jobs/{jobId}/record.json             the job's outcome
 */
const pad = (n: number): string => String(n).padStart(6, '0');

/** Where every lineage's keys are. */
export const LINEAGES_ROOT = 'lineages/';
export const lineagePrefix = (lineage: string): string => `${LINEAGES_ROOT}${lineage}`;
export const promotedKey = (lineage: string): string => `${lineagePrefix(lineage)}/promoted.json`;
export const lineageLatestKey = (lineage: string): string => `${lineagePrefix(lineage)}/latest.json`;
/** Whether `key` is a lineage's promoted or latest pointer: a commit the lineage's next job may resume. */
export const isCommitPointer = (key: string): boolean =>
  /^lineages\/[^/]+\/(promoted|latest)\.json$/.test(key);
export const usedDocsKey = (lineage: string): string => `${lineagePrefix(lineage)}/used-docs.json`;

const jobPrefix = (lineage: string, jobId: string): string => `${lineagePrefix(lineage)}/jobs/${jobId}`;
export const jobExcludeKey = (lineage: string, jobId: string): string =>
  `${jobPrefix(lineage, jobId)}/exclude-docs.json`;
export const jobDocsKey = (lineage: string, jobId: string): string =>
  `${jobPrefix(lineage, jobId)}/docs.json`;
export const jobRecordKey = (lineage: string, jobId: string): string =>
  `${jobPrefix(lineage, jobId)}/record.json`;
export const evalResultsKey = (lineage: string, jobId: string, label: string, version: number): string =>
  `${jobPrefix(lineage, jobId)}/eval-${label}-v${pad(version)}.jsonl.gz`;
