import { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { ENCRYPTED_ENCODING, codecKeysFromEnv } from '../../config/payload-codec';
import { selfPlayRun } from '../../workflows';
import { iterationChildId } from '../../workflows/messages';
import { startStack, uniqueId, type TestStack } from '../support/stack';

/**
 * Every Payload in a history, found by shape (an object with `data` bytes and `metadata`), except search
 * attributes (the server must index those, so they are never encoded, and they hold no secrets) and the
 * markers of `patched()` calls: the SDK's core writes those itself, outside the payload codec, and they hold
 * only the patch id, a constant of the workflow code.
 */
function payloads(
  value: unknown,
  out: temporal.api.common.v1.IPayload[] = [],
): temporal.api.common.v1.IPayload[] {
  if (value instanceof Uint8Array || value === null || typeof value !== 'object') return out;
  const record = value as Record<string, unknown>;
  if (record.data instanceof Uint8Array && 'metadata' in record) {
    out.push(record);
    return out;
  }
  if (record.markerName === 'core_patch') return out;
  for (const [k, v] of Object.entries(record)) if (k !== 'searchAttributes') payloads(v, out);
  return out;
}

/**
 * A run through the real Temporal server with the session's codec key (SELFPLAY_CODEC_KEYS, as deployed): what
 * the server stores, read by a client WITHOUT the codec, is ciphertext; the run itself is unaffected.
 */
describe('payload encryption on a real Temporal server', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  test('stored run and iteration histories hold only ciphertext payloads', async () => {
    expect(codecKeysFromEnv()?.length).toBe(1);
    const runId = uniqueId('codec');
    const config = stack.runConfig({ iterations: 1, training: { policy: runId } });
    const outcome = await stack.withWorkers(() =>
      stack.client.workflow.execute(selfPlayRun, {
        workflowId: runId,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [config],
      }),
    );
    expect(outcome).toMatchObject({ lastCommitted: 1 });

    const plainClient = new Client({ connection: stack.client.connection });
    for (const id of [runId, iterationChildId(runId, 1)]) {
      const history = await plainClient.workflow.getHandle(id).fetchHistory();
      const all = payloads(history);
      expect(all.length).toBeGreaterThan(5);
      for (const p of all) {
        expect(Buffer.from(p.metadata?.encoding ?? []).toString()).toBe(ENCRYPTED_ENCODING);
        const bytes = Buffer.from(p.data ?? []).toString('latin1');
        for (const clear of [runId, 'test/fixtures/corpus/small.jsonl', stack.storageUri, 'spice']) {
          expect(bytes).not.toContain(clear);
        }
      }
    }
    // Without the codec the input cannot be read back; with it, it can.
    const started = (await plainClient.workflow.getHandle(runId).fetchHistory()).events?.[0];
    const input = started?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    expect(() => {
      JSON.parse(Buffer.from(input?.data ?? []).toString());
    }).toThrow();
    expect(await stack.client.workflow.getHandle(runId).result()).toEqual(outcome);
  }, 300_000);
});
