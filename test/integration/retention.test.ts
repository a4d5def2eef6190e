import { WorkflowFailedError } from '@temporalio/client';
import { sendRollback } from '../../cli/lineage';
import { selfPlayRun } from '../../workflows';
import { progressQuery } from '../../workflows/messages';
import { startStack, uniqueId, type TestStack } from '../support/stack';
import { waitFor } from '../support/wait';

/**
 * `training.retention` on the real stack (Temporal, MinIO, the scripted LLM, the recording trainer, which
 * writes a checkpoint per version): after each commit the run deletes the checkpoints no kept commit names,
 * keeps the commits another run started from, and a start from a deleted commit is refused with the reason.
 */
describe('training.retention', () => {
  let stack: TestStack;
  /** A training step the trainer holds until the test releases it. */
  let held: { runId: string; iteration: number; released: Promise<void> } | undefined;
  beforeAll(async () => {
    stack = await startStack({
      beforeStep: async ({ runId, iteration }) => {
        if (held?.runId === runId && held.iteration === iteration) await held.released;
      },
    });
  });
  afterAll(() => stack.close());

  const start = (runId: string, overrides: Record<string, unknown>) =>
    stack.client.workflow.start(selfPlayRun, {
      workflowId: runId,
      taskQueue: `${stack.queuePrefix}-orchestrator`,
      args: [stack.runConfig({ batchSize: 4, groupSize: 2, ...overrides })],
    });
  const run = async (runId: string, overrides: Record<string, unknown>) =>
    (await start(runId, overrides)).result();
  /** The versions of `policy` with a checkpoint (complete or not) under `runs/{runId}/`. */
  const checkpoints = async (runId: string, policy: string): Promise<number[]> => {
    const keys = await stack.store.list(`runs/${runId}/checkpoints/${policy}/`);
    return [...new Set(keys.map((k) => Number(/\/v(\d+)\//.exec(k)?.[1])))].sort((a, b) => a - b);
  };

  test('keepLast 2, keepEvery 3: the newest two, the milestones and a fork point stay; nothing else', async () => {
    const runId = uniqueId('keep');
    const forkId = uniqueId('keep-fork');
    const training = { policy: runId, retention: { keepLast: 2, keepEvery: 3 } };
    await stack.withWorkers(async () => {
      await run(runId, { iterations: 5, training });
      expect(await checkpoints(runId, runId)).toEqual([3, 4, 5]);

      // What `selfplay fork` starts: a new run from iteration 4, which the source run keeps from now on.
      await run(forkId, { iterations: 5, training, resumeFrom: { runId, iteration: 4 } });
      expect(await checkpoints(forkId, runId)).toEqual([5]);
      // Started again with more iterations, the run goes on after 5 and keeps 3, 6, 4 (the fork's), 7 and 8.
      expect(await run(runId, { iterations: 8, training })).toMatchObject({ lastCommitted: 8 });
      expect(await checkpoints(runId, runId)).toEqual([3, 4, 6, 7, 8]);

      // Version 5 is gone: a run resumed from it is refused at its start, saying why.
      const refused = await run(uniqueId('too-late'), {
        training,
        resumeFrom: { runId, iteration: 5 },
      }).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(WorkflowFailedError);
      expect(rootCause(refused)).toMatchObject({ type: 'InvalidConfig', nonRetryable: true });
      expect(rootCause(refused).message).toMatch(
        new RegExp(`^resumeFrom: iteration 5 of run "${runId}" can no longer be restored: its checkpoint`),
      );
    });
  });

  test('a rollback: to a deleted commit is refused with the reason; the abandoned versions go', async () => {
    const runId = uniqueId('rolled');
    const training = { policy: runId, retention: { keepLast: 2, keepEvery: 0 } };
    let release = (): void => undefined;
    held = { runId, iteration: 4, released: new Promise((resolve) => (release = resolve)) };
    await stack.withWorkers(async () => {
      // Iteration 4 is held in its training step: 3 commits, and retention keeps 2 and 3.
      const handle = await start(runId, { iterations: 6, training });
      await waitFor('3 commits', async () => (await handle.query(progressQuery)).lastCommitted === 3);
      await expect(sendRollback(stack.client, runId, 1)).rejects.toThrow(
        `rollback: iteration 1 of run "${runId}" can no longer be restored: its checkpoint`,
      );
      expect(await handle.query(progressQuery)).toMatchObject({ lastCommitted: 3, lineage: runId });
      await sendRollback(stack.client, runId, 2);
      release();
      expect(await handle.result()).toMatchObject({ lastCommitted: 6 });
    });
    // The commit rolled back to stays; the abandoned iteration 3's version and the new lineage's older ones go.
    expect(await checkpoints(runId, runId)).toEqual([2]);
    expect(await checkpoints(`${runId}.r1`, runId)).toEqual([5, 6]);
  });
});

/** The innermost cause of a failure: what the activity said. */
function rootCause(err: unknown): Error & { type?: string } {
  let e = err as Error;
  while (e.cause instanceof Error) e = e.cause;
  return e;
}
