import type { Manifest } from '../../contracts/selfplay';
import type {
  CheckpointRef,
  FinishJobInput,
  PreparedJob,
  PrepareJobInput,
  PromotedPointer,
  RecordedRun,
  RecordRunInput,
} from '../../contracts/continual';
import type { ActivityDeps } from '../stages/deps';
import type { ObjectStore } from '../clients/storage';
import { getJson, getJsonl, putJson } from '../clients/storage/codec';
import { iterationPrefix } from '../clients/storage/keys';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import { keptManifest, notCommittedAs } from '../stages/lineage';
import { jobDocsKey, jobExcludeKey, jobRecordKey, lineageLatestKey, promotedKey, usedDocsKey } from './keys';
import { documentIdsOfUnit } from './used-documents';

/**
 * The lineage's bookkeeping around one job, on the orchestrator pool. Every write is idempotent (a retry
 * after a crash writes the same objects), and the pointers move only after what they point to is committed.
 */
export function lineageJobActivities(deps: ActivityDeps) {
  const { store } = deps;

  return {
    /** Where the job starts, and a frozen copy of the documents the lineage used so far. */
    async prepareLineageJob(input: PrepareJobInput): Promise<PreparedJob> {
      const { lineage, jobId } = input;
      const promoted = await getJson<PromotedPointer>(store, promotedKey(lineage));
      const latest = await getJson<CheckpointRef>(store, lineageLatestKey(lineage));
      const start = promoted ?? latest ?? (input.origin && (await originCheckpoint(store, input.origin)));
      const excludeKey = jobExcludeKey(lineage, jobId);
      // Written once: a retried prepare must not see documents a later job added.
      let excluded = await getJson<string[]>(store, excludeKey);
      if (!excluded) {
        excluded = (await getJson<string[]>(store, usedDocsKey(lineage))) ?? [];
        await putJson(store, excludeKey, excluded);
      }
      return {
        ...(start ? { start: checkpointOf(start) } : {}),
        ...(promoted ? { promoted } : {}),
        excludeDocIdsUri: store.uri(excludeKey),
        excludedDocuments: excluded.length,
      };
    },

    /**
     * After the job's run completed: the documents its iterations planned from join the lineage's used set,
     * and the lineage's latest pointer moves to the run's last commit (the promotion candidate).
     */
    async recordLineageRun(input: RecordRunInput): Promise<RecordedRun> {
      const { lineage, jobId, runId, fromIteration } = input;
      // Along the iterations the run kept: an operator may have rolled the job's run back.
      const kept = (at?: number) =>
        keptManifest(store, runId, at).catch(notCommittedAs(NON_RETRYABLE.invalidInput, "the job's run"));
      const last = await kept();
      if (last.manifest.iteration < fromIteration) {
        throw nonRetryable(
          NON_RETRYABLE.invalidInput,
          `run "${runId}" committed no iteration from ${fromIteration} on in ${store.root}`,
        );
      }
      const documents = new Set<string>();
      for (let n = fromIteration; n <= last.manifest.iteration; n++) {
        const { lineage: holder } = await kept(n); // an iteration without a manifest did not happen
        for (const key of await store.list(`${iterationPrefix(holder, n)}/plan/`)) {
          for (const unit of (await getJsonl<unknown>(store, key)) ?? []) {
            for (const id of documentIdsOfUnit(unit)) documents.add(id);
          }
        }
      }
      const candidate = checkpointOf(last.manifest);
      const used = new Set([...((await getJson<string[]>(store, usedDocsKey(lineage))) ?? []), ...documents]);
      await putJson(store, jobDocsKey(lineage, jobId), [...documents].sort());
      await putJson(store, usedDocsKey(lineage), [...used].sort());
      await putJson(store, lineageLatestKey(lineage), candidate);
      return { candidate, documents: documents.size, lineageDocuments: used.size };
    },

    /** The promoted pointer (when the candidate won), then the job's record. */
    async finishLineageJob(input: FinishJobInput): Promise<void> {
      if (input.promote) await putJson(store, promotedKey(input.lineage), input.promote);
      await putJson(store, jobRecordKey(input.lineage, input.outcome.jobId), input.outcome);
    },
  };
}

/** The committed iteration a lineage with no job yet starts from: the config's `resumeFrom`. */
async function originCheckpoint(
  store: ObjectStore,
  origin: { runId: string; iteration?: number },
): Promise<CheckpointRef> {
  const { manifest } = await keptManifest(store, origin.runId, origin.iteration).catch(
    notCommittedAs(NON_RETRYABLE.invalidConfig, 'config.resumeFrom'),
  );
  return checkpointOf(manifest);
}

function checkpointOf(from: CheckpointRef | Manifest): CheckpointRef {
  if ('policy' in from) {
    const { runId, iteration, policy, policyVersion, snapshot } = from;
    return { runId, iteration, policy, policyVersion, ...(snapshot ? { snapshot } : {}) };
  }
  const [entry, ...others] = Object.entries(from.policies);
  if (!entry || others.length > 0) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `continual training evaluates and promotes one policy; run "${from.runId}" trains ` +
        `${Object.keys(from.policies).join(', ')}`,
    );
  }
  const [policy, committed] = entry;
  return {
    runId: from.runId,
    iteration: from.iteration,
    policy,
    policyVersion: committed.version,
    ...(committed.snapshot ? { snapshot: committed.snapshot } : {}),
  };
}
