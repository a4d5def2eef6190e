import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { HistoryAndWorkflowId, WorkflowExecutionInfo } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Worker, type ReplayResult } from '@temporalio/worker';
import { sendControl } from '../../cli/controls';
import { dataConverterFromEnv } from '../../config/payload-codec';
import { sendRollback } from '../../cli/lineage';
import { selfPlayRun } from '../../workflows';
import { progressQuery } from '../../workflows/messages';
import { startStack, uniqueId, workflowBundle, type TestStack } from '../support/stack';
import { waitFor } from '../support/wait';

/**
 * Histories recorded by earlier versions of the workflows: every one must replay on this version. Stored as
 * gzipped binary protobuf: the SDK's JSON history converters fail in this install (two copies of
 * protobufjs 8, one under @temporalio/common and one under @temporalio/proto, break its `instanceof` checks),
 * and a decoded proto is what the replayer takes as it is.
 */
const FIXTURES = path.join(__dirname, '../fixtures/histories');
const HistoryProto = temporal.api.history.v1.History;

type RecordedHistory = HistoryAndWorkflowId & { history: temporal.api.history.v1.IHistory };

/**
 * Replay: a worker upgraded under a multi-day run replays that run's history with the new workflow code, and
 * a change that alters the commands an old history recorded fails the run with a nondeterminism error. So
 * (1) the histories of runs made now, through the paths the workflows have (pause, setParams, rollback with
 * its cancelled child, continue-as-new, SPELL's accumulation rounds, two policies, a failed iteration waiting
 * for its operator and retried), replay on this version's bundle, and (2) the histories recorded by earlier
 * versions (test/fixtures/histories/) replay on it too.
 * `SELFPLAY_RECORD_HISTORIES=DIR` writes (1)'s histories to DIR: how the fixtures were made.
 */
describe('workflow replay', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  const replay = async (histories: RecordedHistory[]): Promise<string[]> => {
    const failures: string[] = [];
    const results: AsyncIterable<ReplayResult> = Worker.runReplayHistories(
      {
        workflowBundle: await workflowBundle(),
        replayName: 'replay-test',
        dataConverter: dataConverterFromEnv(),
      },
      histories,
    );
    for await (const result of results)
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    return failures;
  };

  /** Every closed execution whose workflow id starts with `prefix` (parents, continued runs, children). */
  const historiesOf = async (prefix: string, mustInclude: string[]): Promise<RecordedHistory[]> => {
    let executions: WorkflowExecutionInfo[] = [];
    await waitFor('every execution closed in visibility', async () => {
      executions = [];
      for await (const e of stack.client.workflow.list({ query: `WorkflowId STARTS_WITH "${prefix}"` }))
        executions.push(e);
      const ids = new Set(executions.map((e) => e.workflowId));
      return mustInclude.every((id) => ids.has(id)) && executions.every((e) => e.status.name !== 'RUNNING');
    });
    return Promise.all(
      executions.map(async (e) => ({
        workflowId: e.workflowId,
        history: await stack.client.workflow.getHandle(e.workflowId, e.runId).fetchHistory(),
      })),
    );
  };

  /** `{workflow id, URI-encoded}~{n}.pb.gz`: the replayer needs the id (child ids derive from it). */
  const record = (histories: RecordedHistory[]): void => {
    const dir = process.env.SELFPLAY_RECORD_HISTORIES;
    if (!dir) return;
    mkdirSync(dir, { recursive: true });
    histories.forEach(({ workflowId, history }, i) => {
      const name = `${encodeURIComponent(workflowId)}~${i}.pb.gz`;
      writeFileSync(path.join(dir, name), gzipSync(HistoryProto.encode(history).finish()));
    });
  };

  test("histories of this version's runs replay on it: controls, rollback, continue-as-new, rounds, two policies, evaluation", async () => {
    const spice = uniqueId('replay-spice');
    const spell = uniqueId('replay-spell');
    const two = uniqueId('replay-two');
    await stack.withWorkers(async () => {
      const handle = await stack.client.workflow.start(selfPlayRun, {
        workflowId: spice,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [
          stack.runConfig({
            iterations: 4,
            continueAsNewEvery: 2,
            batchSize: 4,
            training: { policy: spice },
          }),
        ],
      });
      await waitFor('2 commits', async () => (await handle.query(progressQuery)).lastCommitted >= 2);
      // The controls go to the run continued as new after its second commit, once it has started: a rollback
      // that reaches a run still starting is refused ("the run is still starting"), by design.
      await waitFor(
        'the run continued as new',
        async () =>
          (await handle.describe()).runId !== handle.firstExecutionRunId &&
          (await handle.query(progressQuery)).state !== 'starting',
      );
      await sendControl(stack.client, spice, 'pause');
      await sendControl(stack.client, spice, 'set', { temperature: 0.9 });
      await sendRollback(stack.client, spice, 1);
      await sendControl(stack.client, spice, 'resume');
      expect((await handle.result()).lastCommitted).toBe(4);

      const spellRun = await stack.client.workflow.execute(selfPlayRun, {
        workflowId: spell,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [
          stack.runConfig({
            recipe: 'spell',
            iterations: 1,
            batchSize: 6,
            shardSize: 3,
            groupSize: 4,
            corpus: { uri: 'test/fixtures/corpus/clusters.jsonl' },
            spell: { responderGroups: 1000, maxRounds: 2 },
            training: { policy: spell },
          }),
        ],
      });
      expect(spellRun.lastCommitted).toBe(1);

      const twoRun = await stack.client.workflow.execute(selfPlayRun, {
        workflowId: two,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [
          stack.runConfig({
            iterations: 1,
            batchSize: 4,
            training: {
              policies: {
                [`${two}-c`]: { roles: ['challenger'] },
                [`${two}-r`]: { roles: ['reasoner', 'eval'] },
              },
            },
            // Held-out evaluation of the start and of the commit, beside and after the stages.
            evaluation: {
              every: 1,
              atStart: true,
              benchmarks: [{ name: 'heldout', uri: 'test/fixtures/eval/heldout.jsonl' }],
            },
          }),
        ],
      });
      expect(twoRun.versions).toEqual({ [`${two}-c`]: 1, [`${two}-r`]: 1 });
    });

    const spiceHistories = await historiesOf(spice, [spice, `${spice}.r1/iter-000004`]);
    const spellHistories = await historiesOf(spell, [spell, `${spell}/iter-000001`]);
    const twoHistories = await historiesOf(two, [two, `${two}/iter-000001`]);
    // The parent continued as new at least once; the rollback's lineage ran its own children.
    expect(spiceHistories.filter((h) => h.workflowId === spice).length).toBeGreaterThanOrEqual(2);
    expect(spiceHistories.filter((h) => h.workflowId.startsWith(`${spice}.r1/`)).length).toBe(3);
    // The two-policy iteration evaluated its start and its commit.
    const evaluations = twoHistories
      .filter((h) => h.workflowId === `${two}/iter-000001`)
      .flatMap((h) => h.history.events ?? [])
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'evaluateBenchmarks');
    expect(evaluations).toHaveLength(2);
    const histories = [...spiceHistories, ...spellHistories, ...twoHistories];
    expect(await replay(histories)).toEqual([]);
    record(histories);
  });

  test('a run that waited for its operator after a failed iteration, then retried it, replays', async () => {
    const runId = uniqueId('replay-retry');
    // The server does not serve the policy's model: iteration 1 fails for good and the run waits.
    stack.llm.configure({ models: ['another-model'] });
    try {
      await stack.withWorkers(async () => {
        const handle = await stack.client.workflow.start(selfPlayRun, {
          workflowId: runId,
          taskQueue: `${stack.queuePrefix}-orchestrator`,
          args: [stack.runConfig({ iterations: 1, batchSize: 4, training: { policy: runId } })],
        });
        await waitFor(
          'the run to wait',
          async () => (await handle.query(progressQuery)).state === 'needsOperator',
        );
        stack.llm.configure({ models: ['scripted-policy'] });
        await sendControl(stack.client, runId, 'retry');
        expect((await handle.result()).lastCommitted).toBe(1);
      });
    } finally {
      stack.llm.configure({ models: ['scripted-policy'] });
    }
    const histories = await historiesOf(runId, [runId, `${runId}/iter-000001`]);
    // The failed child and the retried one: two executions under one id.
    expect(histories.filter((h) => h.workflowId === `${runId}/iter-000001`).length).toBe(2);
    expect(await replay(histories)).toEqual([]);
    record(histories);
  });

  test.each([
    ['one-step-off', { maxStaleness: 1 }, 'iterationSampled'],
    ['streaming', { maxStaleness: 1, streaming: true }, 'iterationIssued'],
  ])(
    'a run with two iterations in flight (%s) replays: pause, rollback, continue-as-new',
    async (mode, pipeline, startSignal) => {
      const runId = uniqueId(`replay-${mode}`);
      // One-step-off rows carry the log-probs they were sampled with (behaviour-logprobs.ts), as vLLM returns.
      stack.llm.configure({ tokenIds: 'vllm' });
      try {
        await stack.withWorkers(async () => {
          const handle = await stack.client.workflow.start(selfPlayRun, {
            workflowId: runId,
            taskQueue: `${stack.queuePrefix}-orchestrator`,
            args: [
              stack.runConfig({
                iterations: 4,
                continueAsNewEvery: 3,
                batchSize: 4,
                training: { policy: runId },
                pipeline,
              }),
            ],
          });
          await waitFor('1 commit', async () => (await handle.query(progressQuery)).lastCommitted >= 1);
          // Iteration 2 (started beside 1) is in flight or committed: the rollback cancels what is in flight.
          await sendControl(stack.client, runId, 'pause');
          await sendRollback(stack.client, runId, 1);
          await sendControl(stack.client, runId, 'resume');
          expect((await handle.result()).lastCommitted).toBe(4);
        });
      } finally {
        stack.llm.configure({ tokenIds: 'none' });
      }
      const histories = await historiesOf(runId, [runId, `${runId}.r1/iter-000004`]);
      const signalled = (h: RecordedHistory, name: string): boolean =>
        (h.history.events ?? []).some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === name);
      // The lineage after the rollback overlapped its iterations again, each started on the mode's signal.
      const children = histories.filter((h) => h.workflowId.startsWith(`${runId}.r1/`));
      expect(children.some((h) => signalled(h, 'baseCommitted'))).toBe(true);
      expect(histories.some((h) => h.workflowId === runId && signalled(h, startSignal))).toBe(true);
      expect(await replay(histories)).toEqual([]);
      record(histories);
    },
  );

  test('histories recorded by earlier versions replay on this one', async () => {
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.pb.gz'));
    expect(files.length).toBeGreaterThan(0);
    const histories = files.map((f) => ({
      workflowId: decodeURIComponent(f.slice(0, f.lastIndexOf('~'))),
      history: HistoryProto.decode(gunzipSync(readFileSync(path.join(FIXTURES, f)))),
    }));
    expect(await replay(histories)).toEqual([]);
  });
});
