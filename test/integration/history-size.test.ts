import { temporal } from '@temporalio/proto';
import { selfPlayRun } from '../../workflows';
import { startStack, uniqueId, type TestStack } from '../support/stack';

type History = temporal.api.history.v1.IHistory;

/** Every Payload in an event, found by shape: an object with `data` bytes (args, results, heartbeats, memo). */
function payloadSizes(value: unknown, out: number[] = []): number[] {
  if (value instanceof Uint8Array || value === null || typeof value !== 'object') return out;
  const record = value as Record<string, unknown>;
  if (record.data instanceof Uint8Array && 'metadata' in record) {
    out.push(temporal.api.common.v1.Payload.encode(record).finish().length);
    return out;
  }
  for (const v of Object.values(record)) payloadSizes(v, out);
  return out;
}

const historyBytes = (history: History): number =>
  temporal.api.history.v1.History.encode(history).finish().length;

/**
 * Only references and small summaries cross the workflow boundary: at the paper's B=128, G=8 an
 * iteration's history stays under 200 events and 256 KB, and no payload reaches 64 KB.
 */
describe('workflow histories at B=128, G=8', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack({ llm: { capacity: 256 } });
  });
  afterAll(() => stack.close());

  test('an iteration stays under 200 events and 256 KB, every payload under 64 KB', async () => {
    const runId = uniqueId('history');
    await stack.withWorkers(() =>
      stack.client.workflow.execute(selfPlayRun, {
        workflowId: runId,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [
          stack.runConfig({
            batchSize: 128,
            groupSize: 8,
            shardSize: 32,
            iterations: 1,
            training: { policy: runId },
          }),
        ],
      }),
    );
    const iteration = await stack.client.workflow.getHandle(`${runId}/iter-000001`).fetchHistory();
    const run = await stack.client.workflow.getHandle(runId).fetchHistory();
    const events = iteration.events ?? [];
    const sizes = [...payloadSizes(iteration), ...payloadSizes(run)];

    console.log(
      `iteration history: ${events.length} events, ${historyBytes(iteration)} bytes; run history: ` +
        `${run.events?.length} events; largest payload ${Math.max(...sizes)} bytes`,
    );
    expect(events.length).toBeLessThan(200);
    expect(historyBytes(iteration)).toBeLessThan(256 * 1024);
    expect(sizes.length).toBeGreaterThan(10);
    expect(Math.max(...sizes)).toBeLessThan(64 * 1024);
    expect(stack.trainer.stats().steps.find((s) => s.runId === runId)?.roles.challenger).toBe(128 * 8);
  });
});
