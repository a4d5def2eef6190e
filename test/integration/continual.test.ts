import type { ObjectStore } from '../../activities/clients/storage';
import { getJson, getJsonl } from '../../activities/clients/storage/codec';
import { iterationPrefix, manifestKey } from '../../activities/clients/storage/keys';
import {
  jobDocsKey,
  jobExcludeKey,
  jobRecordKey,
  lineageLatestKey,
  promotedKey,
  usedDocsKey,
} from '../../activities/continual/keys';
import type { EvalVerdict } from '../../activities/continual/evaluate-policy';
import {
  controlSchedule,
  createSchedule,
  describeSchedule,
  listSchedules,
  scheduleOptions,
} from '../../cli/schedule';
import type { Manifest } from '../../contracts/selfplay';
import type { continualTraining } from '../../workflows';
import type { ContinualOutcome, PromotedPointer } from '../../contracts/continual';
import { startStack, uniqueId, type TestStack } from '../support/stack';
import { waitFor } from '../support/wait';

const EVAL = 'test/fixtures/eval/heldout.jsonl';
const EVAL_ITEMS = ['arith-1', 'arith-2', 'arith-3', 'expand-1', 'expand-2', 'reverse-1'];
/** The scripted server serves the policy under a name per version, as vLLM serves one LoRA adapter per version. */
const MODELS = ['scripted-policy', ...Array.from({ length: 20 }, (_, v) => `scripted-policy-v${v}`)];

/**
 * Nightly continual training as a Temporal Schedule, on the real stack: the schedule made by the CLI's own
 * functions, jobs started by triggering it, and the scripted LLM answering the held-out set better or worse
 * depending on the version in the model name.
 */
describe('continual training schedules on the real stack', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // v0 knows nothing, every later version everything: the first job must win its evaluation.
    stack = await startStack({ llm: { models: MODELS, evalSkill: { base: 0, perVersion: 1 } } });
  });
  afterAll(() => stack.close());

  const lineageConfig = (lineage: string): Record<string, unknown> =>
    stack.runConfig({
      batchSize: 4,
      shardSize: 4,
      inference: {
        default: { model: 'scripted-policy-v{version}' },
        requestTimeoutSeconds: 10,
        maxRetries: 3,
      },
      // The recording trainer is shared by the file's tests: one policy per lineage.
      training: { policy: lineage },
    });
  const create = (lineage: string, overrides: { eval?: string; iterations?: string } = {}) =>
    createSchedule(
      stack.client,
      scheduleOptions({
        lineage,
        cron: '0 2 * * *',
        iterations: overrides.iterations ?? '2',
        eval: overrides.eval ?? EVAL,
        catchupWindow: '1h',
        config: lineageConfig(lineage),
      }),
    );
  /** Triggers the schedule and returns the id of the job it started (the n-th action, from 0). */
  const trigger = async (lineage: string, n: number): Promise<string> => {
    await controlSchedule(stack.client, lineage, 'trigger');
    let id: string | undefined;
    await waitFor(`job ${n} of ${lineage} to start`, async () => {
      id = (await describeSchedule(stack.client, stack.store, lineage)).recentJobs[n];
      return id !== undefined;
    });
    return id as string;
  };
  const runJob = async (lineage: string, n: number): Promise<ContinualOutcome> =>
    stack.client.workflow.getHandle<typeof continualTraining>(await trigger(lineage, n)).result();

  test('jobs resume the lineage, never reuse a document, store their evaluations and promote only a better checkpoint; list, pause and delete work', async () => {
    const lineage = uniqueId('nightly');
    await stack.withWorkers(async () => {
      await create(lineage);
      await expect(create(lineage)).rejects.toThrow(
        `lineage "${lineage}" already has a schedule (lineage-${lineage}); change it after 'selfplay schedule delete ${lineage}'`,
      );

      // Job 1: a new lineage starts from scratch, and its checkpoint beats version 0.
      const first = await runJob(lineage, 0);
      expect(first.startedFrom).toBeUndefined();
      expect(first.jobId).toMatch(new RegExp(`^${lineage}-\\d{8}T\\d{6}Z-[0-9a-f]{8}$`));
      expect(first.iterations).toEqual({ from: 1, to: 2 });
      for (const n of [1, 2]) expect(await manifest(stack.store, first.jobId, n)).toBeDefined();
      expect(first.baseline).toMatchObject({ policyVersion: 0, correct: 0, total: EVAL_ITEMS.length });
      expect(first.candidate).toMatchObject({ runId: first.jobId, iteration: 2, score: 1 });
      expect(first.candidate.policyVersion).toBeGreaterThan(0);
      expect(first.promoted).toBe(true);
      await expectVerdicts(stack.store, first.candidate.resultsKey, true);
      await expectVerdicts(stack.store, first.baseline!.resultsKey, false);
      const promoted = await getJson<PromotedPointer>(stack.store, promotedKey(lineage));
      expect(promoted).toMatchObject({
        runId: first.jobId,
        iteration: 2,
        policyVersion: first.candidate.policyVersion,
        score: 1,
        evalKey: first.candidate.resultsKey,
      });
      const firstDocs = await plannedDocuments(stack.store, first.jobId, [1, 2]);
      expect(firstDocs.size).toBeGreaterThan(0);
      expect(firstDocs.size).toBe(first.documents);
      expect(await getJson<string[]>(stack.store, jobDocsKey(lineage, first.jobId))).toEqual(
        [...firstDocs].sort(),
      );
      expect(await getJson(stack.store, jobRecordKey(lineage, first.jobId))).toEqual(first);

      // Job 2: from now on every version after the promoted one answers everything wrong.
      const v1 = first.candidate.policyVersion;
      stack.llm.configure({ evalSkill: { base: v1 + 1, perVersion: -1 } });
      const second = await runJob(lineage, 1);
      expect(second.startedFrom).toMatchObject({ runId: first.jobId, iteration: 2, policyVersion: v1 });
      expect(second.iterations).toEqual({ from: 3, to: 4 });
      expect(await manifest(stack.store, second.jobId, 1)).toBeUndefined();
      for (const n of [3, 4]) expect(await manifest(stack.store, second.jobId, n)).toBeDefined();
      expect(second.baseline).toMatchObject({
        runId: first.jobId,
        iteration: 2,
        policyVersion: v1,
        score: 1,
      });
      expect(second.candidate.policyVersion).toBeGreaterThan(v1);
      expect(second.candidate.score).toBe(0);
      expect(second.promoted).toBe(false);
      await expectVerdicts(stack.store, second.candidate.resultsKey, false);
      expect(await getJson(stack.store, promotedKey(lineage))).toEqual(promoted);
      expect(await getJson(stack.store, lineageLatestKey(lineage))).toMatchObject({
        runId: second.jobId,
        iteration: 4,
        policyVersion: second.candidate.policyVersion,
      });

      // No document trained on twice: the second job excluded exactly what the first used.
      const secondDocs = await plannedDocuments(stack.store, second.jobId, [3, 4]);
      expect(secondDocs.size).toBeGreaterThan(0);
      expect([...secondDocs].filter((d) => firstDocs.has(d))).toEqual([]);
      expect(await getJson(stack.store, jobExcludeKey(lineage, second.jobId))).toEqual([...firstDocs].sort());
      expect(await getJson(stack.store, usedDocsKey(lineage))).toEqual([...firstDocs, ...secondDocs].sort());
      expect(second.lineageDocuments).toBe(firstDocs.size + secondDocs.size);

      // The operator's view and controls.
      await waitFor('the schedule in the list', async () =>
        (await listSchedules(stack.client)).some((s) => s.lineage === lineage && s.recentJobs.length === 2),
      );
      await controlSchedule(stack.client, lineage, 'pause');
      const paused = await describeSchedule(stack.client, stack.store, lineage);
      expect(paused).toMatchObject({ paused: true, cron: '0 2 * * *', iterations: 2, eval: EVAL, promoted });
      expect(paused.note).toContain('paused from the CLI');
      await controlSchedule(stack.client, lineage, 'unpause');
      expect((await describeSchedule(stack.client, stack.store, lineage)).paused).toBe(false);
      await controlSchedule(stack.client, lineage, 'delete');
      await expect(describeSchedule(stack.client, stack.store, lineage)).rejects.toThrow(
        `lineage "${lineage}" has no schedule`,
      );
      await waitFor('the schedule to leave the list', async () =>
        (await listSchedules(stack.client)).every((s) => s.lineage !== lineage),
      );
    });
  });

  test('a failing job fails its workflow and pauses the schedule', async () => {
    const lineage = uniqueId('failing');
    await stack.withWorkers(async () => {
      await create(lineage, { eval: 'test/fixtures/eval/does-not-exist.jsonl', iterations: '1' });
      const job = stack.client.workflow.getHandle(await trigger(lineage, 0));
      const failure = await job.result().then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(causeMessages(failure)).toContain('held-out set test/fixtures/eval/does-not-exist.jsonl');
      await waitFor(
        'pause on failure',
        async () => (await describeSchedule(stack.client, stack.store, lineage)).paused,
      );
      expect(await getJson(stack.store, promotedKey(lineage))).toBeUndefined();
      await controlSchedule(stack.client, lineage, 'delete');
    });
  });
});

const manifest = (store: ObjectStore, runId: string, n: number) =>
  getJson<Manifest>(store, manifestKey(runId, n));

/** The documents the committed plans of these iterations name, read independently of the lineage's records. */
async function plannedDocuments(
  store: ObjectStore,
  runId: string,
  iterations: number[],
): Promise<Set<string>> {
  const docs = new Set<string>();
  for (const n of iterations) {
    expect(await manifest(store, runId, n)).toBeDefined();
    for (const key of await store.list(`${iterationPrefix(runId, n)}/plan/`)) {
      for (const unit of (await getJsonl<{ docId: string }>(store, key)) ?? []) docs.add(unit.docId);
    }
  }
  return docs;
}

/** Every held-out item has a stored verdict with a boxed answer, all right or all wrong. */
async function expectVerdicts(store: ObjectStore, key: string, correct: boolean): Promise<void> {
  const verdicts = (await getJsonl<EvalVerdict>(store, key))!;
  expect(verdicts.map((v) => v.id)).toEqual(EVAL_ITEMS);
  for (const v of verdicts) {
    expect(v.extracted).not.toBeNull();
    expect(v.correct).toBe(correct);
  }
}

/** The messages along a failure's cause chain (workflow → activity → application failure), joined. */
function causeMessages(err: unknown): string {
  const messages: string[] = [];
  for (let e = err; e instanceof Error; e = e.cause) messages.push(e.message);
  return messages.join(' <- ');
}
