import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { selfPlayRun } from '../../workflows';
import { iterationChildId, progressQuery } from '../../workflows/messages';
import { RUN_STATE } from '../../workflows/search-attributes';
import type { RecordedRunCarry } from '../../contracts/input-upgrade';
import { selfplay } from '../support/cli';
import { startStack, uniqueId, type TestStack } from '../support/stack';
import { waitFor } from '../support/wait';

/**
 * What a run does when an iteration fails for good, and the guards on what a run may write: on the real
 * Temporal server and MinIO, through the `selfplay` CLI process where an operator would use it.
 */
describe('a failed iteration waits for the operator', () => {
  let stack: TestStack;
  /** Runs whose training steps fail (500), as on a kernel whose CUDA calls fail, until taken out. */
  const failingSteps = new Set<string>();
  const STEP_FAULT = 'CUDA error: an illegal memory access was encountered';
  beforeAll(async () => {
    stack = await startStack({
      llm: { latencyMs: 50 },
      beforeStep: ({ runId }) =>
        failingSteps.has(runId) ? Promise.reject(new Error(STEP_FAULT)) : Promise.resolve(),
    });
  });
  afterAll(() => stack.close());

  const start = (runId: string, args: [Record<string, unknown>, RecordedRunCarry?]) =>
    stack.client.workflow.start(selfPlayRun, {
      workflowId: runId,
      taskQueue: `${stack.queuePrefix}-orchestrator`,
      args,
    });

  test('an unknown model: the run is needsOperator (query, search attribute, status, list); retry after the fix completes it', async () => {
    const runId = uniqueId('needs-op');
    await stack.withWorkers(async () => {
      const handle = await start(runId, [stack.runConfig({ iterations: 2, training: { policy: runId } })]);
      await waitFor(
        'an iteration in flight',
        async () => (await handle.query(progressQuery)).iterationInFlight,
      );
      const early = await selfplay(['retry', runId], stack.cliEnv);
      expect(early.code).toBe(1);
      expect(early.stderr).toContain(
        `${runId} refused retry: retryIteration: no failed iteration is waiting to be retried; the run is running`,
      );

      // The inference server stops serving the policy's model: a deterministic failure (404, UnknownModel).
      stack.llm.configure({ models: ['another-model'] });
      await waitFor(
        'the run to wait for its operator',
        async () => (await handle.query(progressQuery)).state === 'needsOperator',
      );
      const waiting = await handle.query(progressQuery);
      const failed = waiting.failure?.iteration as number;
      expect(waiting.failure).toMatchObject({ type: 'UnknownModel' });
      expect(waiting.failure?.message).toContain('the server does not know model "scripted-policy"');
      expect(waiting.lastCommitted).toBe(failed - 1);
      expect((await handle.describe()).status.name).toBe('RUNNING');
      expect((await handle.describe()).typedSearchAttributes.get(RUN_STATE)).toBe('needsOperator');

      const status = await selfplay(['status', runId], stack.cliEnv);
      expect(status.code).toBe(0);
      expect(status.stdout).toContain(`needs operator: iteration ${failed} failed (UnknownModel)`);
      expect(status.stdout).toContain(`fix the cause, then: selfplay retry ${runId}`);
      await waitFor('the list to show the run as needsOperator', async () => {
        const list = await selfplay(['list', '--state', 'needsOperator'], stack.cliEnv);
        return list.stdout.includes(runId);
      });

      // The operator fixes the server and retries: the failed iteration runs again and the run completes.
      stack.llm.configure({ models: ['scripted-policy'] });
      const retried = await selfplay(['retry', runId], stack.cliEnv);
      expect(retried.code).toBe(0);
      expect(retried.stdout).toContain(`${runId}: running, iteration ${failed}/2`);
      const outcome = await handle.result();
      expect(outcome.lastCommitted).toBe(2);
      expect(outcome.stopped).toBeUndefined();
      // One training step per iteration, the retried one included.
      const steps = stack.trainer.stats().steps.filter((s) => s.runId === runId);
      expect(steps.map((s) => s.iteration)).toEqual([1, 2]);
      for (const s of steps) expect(stack.trainer.stats().appliedByKey[s.key]).toBe(1);
    });
  });

  /** A run whose training step fails fast on every attempt (no client retries, short backoff). */
  const failingStepConfig = (runId: string, stuckAfterMinutes: number) =>
    stack.runConfig({
      iterations: 1,
      training: { policy: runId },
      inference: { requestTimeoutSeconds: 10, maxRetries: 0 },
      timeouts: { heartbeatSeconds: 10, retryInitialSeconds: 0.2, retryMaxSeconds: 0.5, stuckAfterMinutes },
    });

  test('selfplay status shows each pending activity with its attempts and last failure', async () => {
    const runId = uniqueId('retrying');
    failingSteps.add(runId);
    await stack.withWorkers(async () => {
      const handle = await start(runId, [failingStepConfig(runId, 60)]);
      // Before: status showed the stage running, and nothing of the attempts failing behind it.
      let status = '';
      await waitFor(
        'status to show the update retried',
        async () => {
          status = (await selfplay(['status', runId], stack.cliEnv)).stdout;
          return /update \(.*\/iter-0+1\): attempt ([3-9]|\d{2,})/.test(status);
        },
        120_000,
      );
      expect(status).toContain('pending activities');
      expect(status.replace(/\s+/g, ' ')).toContain(
        `last failure: trainer ${stack.trainer.url}/v1/train/step: HTTP 500: internal: ${STEP_FAULT}`,
      );
      failingSteps.delete(runId);
      expect(await handle.result()).toMatchObject({ lastCommitted: 1 });
    });
  }, 300_000);

  test('a step failing the same way past timeouts.stuckAfterMinutes: the run waits for its operator with that failure', async () => {
    const runId = uniqueId('stuck');
    failingSteps.add(runId);
    await stack.withWorkers(async () => {
      // Before: retried every half second, forever, the run "running".
      const handle = await start(runId, [failingStepConfig(runId, 0.05)]);
      await waitFor(
        'the run to wait for its operator',
        async () => (await handle.query(progressQuery)).state === 'needsOperator',
      );
      const { failure } = await handle.query(progressQuery);
      expect(failure).toMatchObject({ iteration: 1, type: 'StuckActivity' });
      expect(failure?.message).toMatch(
        /^update has failed for [\d.]+ min without progress, \d+ attempts \(timeouts\.stuckAfterMinutes 0\.05 min\); last failure: trainer /,
      );
      expect(failure?.message).toContain(`HTTP 500: internal: ${STEP_FAULT}`);
      const status = await selfplay(['status', runId], stack.cliEnv);
      expect(status.stdout).toContain('needs operator: iteration 1 failed (StuckActivity)');

      // The cause fixed, the operator retries: the iteration runs again and its step is applied once.
      failingSteps.delete(runId);
      expect((await selfplay(['retry', runId], stack.cliEnv)).code).toBe(0);
      expect(await handle.result()).toMatchObject({ lastCommitted: 1 });
      const steps = stack.trainer.stats().steps.filter((s) => s.runId === runId);
      expect(steps.map((s) => s.iteration)).toEqual([1]);
    });
  }, 300_000);

  test('a stop accepted before continue-as-new holds in the continued run: it completes at once', async () => {
    const runId = uniqueId('carried-stop');
    // What the run hands over when a stop was accepted while it drained: nothing more may run. Without `v`,
    // as carries were recorded before they had a version: version 1.
    const carry: RecordedRunCarry = {
      nextIteration: 1,
      policies: { policy: { version: 0 } },
      recent: [],
      stopRequested: true,
    };
    await stack.withWorkers(async () => {
      const handle = await start(runId, [
        stack.runConfig({ iterations: 3, training: { policy: runId } }),
        carry,
      ]);
      expect(await handle.result()).toMatchObject({ runId, lastCommitted: 0, stopped: true });
    });
    // No iteration was started, none trained.
    await expect(
      stack.client.workflow.getHandle(iterationChildId(runId, 1)).describe(),
    ).rejects.toBeInstanceOf(WorkflowNotFoundError);
    expect(stack.trainer.stats().steps.filter((s) => s.runId === runId)).toEqual([]);
  });

  test("config.runId other than the workflow id fails the run at once: it would write another run's storage", async () => {
    const runId = uniqueId('intruder');
    await stack.withWorkers(async () => {
      const handle = await start(runId, [stack.runConfig({ runId: 'victim-run', iterations: 1 })]);
      const err = await handle.result().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WorkflowFailedError);
      expect((err as WorkflowFailedError).cause).toMatchObject({ type: 'InvalidConfig' });
      expect((err as WorkflowFailedError).cause?.message).toContain(
        `runId: "victim-run" is not this run's workflow id "${runId}"`,
      );
    });
    expect(await stack.store.list('runs/victim-run/')).toEqual([]);
  });

  test('a workflow id that is no run id (the Web UI takes any) fails the run at once, naming the id and the rule', async () => {
    // Before: the run sat in "starting", its first activity retried on an id no storage key takes.
    const runId = `${uniqueId('spaced')} a b`;
    await stack.withWorkers(async () => {
      const handle = await start(runId, [stack.runConfig({ iterations: 1 })]);
      const err = await handle.result().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WorkflowFailedError);
      expect((err as WorkflowFailedError).cause).toMatchObject({ type: 'InvalidConfig', nonRetryable: true });
      expect((err as WorkflowFailedError).cause?.message).toBe(
        `run id "${runId}" is not valid: a run id takes letters, digits, ".", "_" or "-", starting with a ` +
          "letter or digit (max 128), as it names the run's storage prefix runs/{runId}/",
      );
      const events = (await handle.fetchHistory()).events ?? [];
      expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toEqual([]);
    });
  });

  test("rounds that could outgrow an iteration's history (the Web UI takes any config) fail the run at once, with the arithmetic", async () => {
    const runId = uniqueId('rounds');
    const config = {
      recipe: 'spell',
      batchSize: 2048,
      shardSize: 32,
      spell: { maxRounds: 100 },
      iterations: 1,
    };
    await stack.withWorkers(async () => {
      const handle = await start(runId, [stack.runConfig(config)]);
      const err = await handle.result().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WorkflowFailedError);
      expect((err as WorkflowFailedError).cause).toMatchObject({ type: 'InvalidConfig', nonRetryable: true });
      expect((err as WorkflowFailedError).cause?.message).toMatch(
        /^spell\.maxRounds: 100 rounds × \(64 shards × 24 \+ 6\) \+ 63 = 154,263 events .* at most 16,/,
      );
      const events = (await handle.fetchHistory()).events ?? [];
      expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toEqual([]);
    });
  });
});
