import { selfPlayRun } from '../../workflows';
import { progressQuery } from '../../workflows/messages';
import { paramsFromAssignments, sendControl } from '../../cli/controls';
import { sendRollback } from '../../cli/lineage';
import { startStack, uniqueId, type TestStack } from '../support/stack';
import { waitFor } from '../support/wait';

/** The CLI's controls (`selfplay pause|resume|stop|set RUN`) against a live run on the real server. */
describe('selfplay controls', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack({ llm: { latencyMs: 100 } });
  });
  afterAll(() => stack.close());

  test('pause, a refused set, a valid set, resume and stop reach the run as its updates', async () => {
    const runId = uniqueId('cli');
    await stack.withWorkers(async () => {
      const handle = await stack.client.workflow.start(selfPlayRun, {
        workflowId: runId,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [stack.runConfig({ iterations: 5, training: { policy: runId } })],
      });
      await waitFor(
        'the first iteration to start',
        async () => (await handle.query(progressQuery)).iterationInFlight,
      );

      expect((await sendControl(stack.client, runId, 'pause')).state).toBe('paused');
      await expect(sendControl(stack.client, runId, 'pause')).rejects.toThrow(
        `${runId} refused pause: pause: the run is already paused`,
      );
      await expect(
        sendControl(stack.client, runId, 'set', paramsFromAssignments(['groupSize=1'])),
      ).rejects.toThrow(/groupSize/);
      const set = await sendControl(
        stack.client,
        runId,
        'set',
        paramsFromAssignments(['learningRate=3e-6', 'temperature=0.5']),
      );
      expect(set.params).toMatchObject({ learningRate: 3e-6, temperature: 0.5 });
      expect((await sendControl(stack.client, runId, 'resume')).state).toBe('running');
      expect((await sendControl(stack.client, runId, 'stop')).stopRequested).toBe(true);
      const outcome = await handle.result();
      expect(outcome.stopped).toBe(true);
      expect(outcome.lastCommitted).toBeLessThan(5);
      // Temporal answers a closed run's Update with "workflow execution already completed"; the CLI says which.
      await expect(sendControl(stack.client, runId, 'pause')).rejects.toThrow(
        `${runId} refused pause: the run is completed and takes no more controls; \`selfplay fork ${runId} --from N`,
      );
      await expect(sendRollback(stack.client, runId, 1)).rejects.toThrow(
        `${runId} refused rollback: the run is completed`,
      );
      await expect(sendControl(stack.client, `${runId}-none`, 'retry')).rejects.toThrow(
        `${runId}-none refused retry: no run has this id (\`selfplay list\` shows the runs)`,
      );
    });
  });

  test('assignments must be NAME=NUMBER', () => {
    expect(paramsFromAssignments(['batchSize=64', 'temperature=0.7'])).toEqual({
      batchSize: 64,
      temperature: 0.7,
    });
    expect(() => paramsFromAssignments(['learningRate=fast'])).toThrow('expected NAME=NUMBER');
    expect(() => paramsFromAssignments(['learningRate'])).toThrow('expected NAME=NUMBER');
  });
});
