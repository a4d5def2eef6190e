import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { getJson } from '../../activities/clients/storage/codec';
import { latestKey, manifestKey } from '../../activities/clients/storage/keys';
import type { Manifest } from '../../contracts/selfplay';
import { selfPlayRun } from '../../workflows';
import {
  iterationProgressQuery,
  pauseUpdate,
  progressQuery,
  resumeUpdate,
  setParamsUpdate,
  stopAfterIterationUpdate,
  type RunProgress,
} from '../../workflows/messages';
import {
  ITERATION,
  MEAN_REWARD,
  RECIPE,
  RUN_STATE,
  VALID_TASK_RATE,
} from '../../workflows/search-attributes';
import { startStack, uniqueId, type TestStack } from '../support/stack';
import { waitFor } from '../support/wait';

/** Operator controls on a live run: real Temporal and MinIO, a scripted LLM slow enough to act on a run. */
describe('run controls on the real stack', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack({ llm: { latencyMs: 150 } });
  });
  afterAll(() => stack.close());

  const start = (runId: string, overrides: Record<string, unknown> = {}) =>
    stack.client.workflow.start(selfPlayRun, {
      workflowId: runId,
      taskQueue: `${stack.queuePrefix}-orchestrator`,
      args: [stack.runConfig({ training: { policy: runId }, ...overrides })],
    });
  const progress = (handle: WorkflowHandle<typeof selfPlayRun>): Promise<RunProgress> =>
    handle.query(progressQuery);
  const childId = (runId: string, n: number): string => `${runId}/iter-${String(n).padStart(6, '0')}`;
  const manifest = (runId: string, n: number) => getJson<Manifest>(stack.store, manifestKey(runId, n));
  const latest = async (runId: string) =>
    (await getJson<{ iteration: number }>(stack.store, latestKey(runId)))?.iteration ?? 0;
  /** The update's rejection: its failure's message (the update must be rejected). */
  const rejection = async (update: Promise<unknown>): Promise<string> => {
    const err = await update.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    return String((err as WorkflowUpdateFailedError).cause?.message);
  };
  /** Paused and still: the child holds at a stage boundary, or none is running. */
  const holding = async (handle: WorkflowHandle<typeof selfPlayRun>, runId: string): Promise<boolean> => {
    const p = await progress(handle);
    if (!p.iterationInFlight) return true;
    const it = await stack.client.workflow
      .getHandle(childId(runId, p.iteration))
      .query(iterationProgressQuery);
    return it.held;
  };

  test('pause holds the run at a stage boundary, bad controls are rejected, resume finishes it; the UI sees it all', async () => {
    const runId = uniqueId('pause');
    await stack.withWorkers(async () => {
      const handle = await start(runId, { iterations: 3 });
      await waitFor('iteration 1 in flight', async () => (await progress(handle)).iterationInFlight);

      const paused = await handle.executeUpdate(pauseUpdate);
      expect(paused).toMatchObject({ paused: true, state: 'paused' });
      await waitFor('the run to hold', () => holding(handle, runId));
      const held = await progress(handle);
      expect(held.lastCommitted).toBeLessThan(3);
      expect(await latest(runId)).toBe(held.lastCommitted);

      // Rejected controls change nothing and say why.
      expect(await rejection(handle.executeUpdate(pauseUpdate))).toContain('already paused');
      expect(await rejection(handle.executeUpdate(setParamsUpdate, { args: [{ groupSize: 1 }] }))).toContain(
        'groupSize',
      );
      const unknown = await rejection(
        handle.executeUpdate(setParamsUpdate, { args: [{ shardSize: 2 } as never] }),
      );
      expect(unknown).toContain('shardSize');
      expect(unknown).toContain('not a settable parameter');
      expect(
        await rejection(handle.executeUpdate(setParamsUpdate, { args: [{ temperature: 9 }] })),
      ).toContain('sampling.temperature');

      // Still held: nothing committed, no new iteration, the parameters as they were.
      const still = await progress(handle);
      expect(still).toMatchObject({
        state: 'paused',
        lastCommitted: held.lastCommitted,
        iteration: held.iteration,
        params: held.params,
      });
      expect(await holding(handle, runId)).toBe(true);
      expect(await latest(runId)).toBe(held.lastCommitted);
      expect((await handle.describe()).typedSearchAttributes.get(RUN_STATE)).toBe('paused');

      const resumed = await handle.executeUpdate(resumeUpdate);
      expect(resumed).toMatchObject({ paused: false, state: 'running' });
      expect(await rejection(handle.executeUpdate(resumeUpdate))).toContain('not paused');
      const outcome = await handle.result();
      expect(outcome.lastCommitted).toBe(3);
      expect(outcome.stopped).toBeUndefined();

      // Every iteration ran with the config the run started with: the rejected setParams changed nothing.
      const hashes = new Set<string>();
      for (const n of [1, 2, 3]) hashes.add((await manifest(runId, n))!.configHash);
      expect(hashes.size).toBe(1);

      const lastSummary = outcome.recent[outcome.recent.length - 1]!.summary;
      const description = await handle.describe();
      const attributes = description.typedSearchAttributes;
      expect(attributes.get(RECIPE)).toBe('spice');
      expect(attributes.get(ITERATION)).toBe(3);
      expect(attributes.get(RUN_STATE)).toBe('completed');
      expect(attributes.get(MEAN_REWARD)).toBeCloseTo(lastSummary.meanReward, 9);
      expect(attributes.get(VALID_TASK_RATE)).toBeCloseTo(lastSummary.validTaskRate, 9);
      expect(description.memo).toEqual({ storagePrefix: `runs/${runId}`, configHash: [...hashes][0] });

      // The UI's current details: the state and a table of the latest iterations.
      const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
      const details = metadata.currentDetails ?? '';
      expect(details).toContain('**completed**');
      expect(details).toMatch(
        /\| iteration \| valid-task rate \| reward challenger \| reward reasoner \| rows \| seconds \|/,
      );
      for (const r of outcome.recent)
        expect(details).toContain(`| ${r.iteration} | ${r.summary.validTaskRate.toFixed(3)} |`);
    });
  });

  test('setParams applies from the next iteration; stopAfterIteration completes after the one in flight', async () => {
    const runId = uniqueId('params');
    await stack.withWorkers(async () => {
      const handle = await start(runId, { iterations: 5 });
      await waitFor('iteration 1 in flight', async () => (await progress(handle)).iterationInFlight);

      const changed = await handle.executeUpdate(setParamsUpdate, {
        args: [{ learningRate: 3e-5, temperature: 0.5 }],
      });
      expect(changed.params).toMatchObject({ learningRate: 3e-5, temperature: 0.5, groupSize: 4 });
      const k = changed.iteration; // in flight with the old parameters
      expect(changed.iterationInFlight).toBe(true);

      await waitFor(`iteration ${k + 1} in flight`, async () => {
        const p = await progress(handle);
        return p.iteration > k && p.iterationInFlight;
      });
      const stopping = await handle.executeUpdate(stopAfterIterationUpdate);
      expect(stopping).toMatchObject({ stopRequested: true, state: 'stopping', iterationInFlight: true });
      expect(await rejection(handle.executeUpdate(stopAfterIterationUpdate))).toContain('already requested');
      const last = stopping.iteration;
      expect(last).toBeLessThan(5);

      const outcome = await handle.result();
      expect(outcome).toMatchObject({ lastCommitted: last, stopped: true });
      expect(await latest(runId)).toBe(last);
      expect(await manifest(runId, last + 1)).toBeUndefined();

      const before = (await manifest(runId, k))!.configHash;
      expect((await manifest(runId, 1))!.configHash).toBe(before);
      const after = (await manifest(runId, k + 1))!.configHash;
      expect(after).not.toBe(before);
      expect((await manifest(runId, last))!.configHash).toBe(after);
      expect((await handle.describe()).memo).toMatchObject({ configHash: after });
      expect((await progress(handle)).state).toBe('completed');
    });
  });
});
