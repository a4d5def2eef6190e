import { WorkflowFailedError } from '@temporalio/client';
import { getJson, getJsonl } from '../../activities/clients/storage/codec';
import { batchKey, manifestKey } from '../../activities/clients/storage/keys';
import type { TrainingRow } from '../../activities/clients/trainer-contract';
import type { Manifest } from '../../contracts/selfplay';
import { selfPlayRun } from '../../workflows';
import { startStack, uniqueId, type TestStack } from '../support/stack';

/**
 * Two independently versioned policies in one run (the core SCOPE needs): each trains only the rows of its
 * roles, under its own idempotency key, and is committed with its own version.
 */
describe('a run of two policies', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  const policiesOf = (runId: string) => ({
    [`${runId}-c`]: { roles: ['challenger'] },
    [`${runId}-r`]: { roles: ['reasoner'] },
  });
  const run = (runId: string, overrides: Record<string, unknown> = {}) =>
    stack.client.workflow.execute(selfPlayRun, {
      workflowId: runId,
      taskQueue: `${stack.queuePrefix}-orchestrator`,
      args: [stack.runConfig({ iterations: 2, training: { policies: policiesOf(runId) }, ...overrides })],
    });

  test('each policy trains its own roles’ rows once per iteration and is committed at its own version', async () => {
    const runId = uniqueId('two');
    const [challenger, reasoner] = [`${runId}-c`, `${runId}-r`];
    const outcome = await stack.withWorkers(() => run(runId));
    expect(outcome.versions).toEqual({ [challenger]: 2, [reasoner]: 2 });

    const steps = stack.trainer.stats().steps.filter((s) => s.runId === runId);
    expect(steps.map((s) => s.key).sort()).toEqual(
      [1, 2].flatMap((k) => [`${runId}/iter-${k}/${challenger}`, `${runId}/iter-${k}/${reasoner}`]).sort(),
    );
    for (const step of steps) {
      expect(Object.keys(step.roles)).toEqual([step.policy === challenger ? 'challenger' : 'reasoner']);
      expect(step.baseVersion).toBe(step.iteration - 1);
    }
    for (const k of [1, 2]) {
      const manifest = await getJson<Manifest>(stack.store, manifestKey(runId, k));
      for (const policy of [challenger, reasoner]) {
        expect(manifest?.policies[policy]?.version).toBe(k);
        expect(manifest?.policies[policy]?.checkpointUri).toContain(`checkpoints/${policy}/v00000${k}`);
      }
      expect(Object.keys(manifest?.metrics.train ?? {}).sort()).toEqual([challenger, reasoner]);
      const rows = await getJsonl<TrainingRow>(stack.store, batchKey(runId, k, reasoner));
      expect(rows?.length).toBeGreaterThan(0);
      expect(new Set(rows?.map((r) => r.role))).toEqual(new Set(['reasoner']));
    }
  });

  test('a resume whose config trains a policy the commit does not have is refused, naming both sets', async () => {
    const source = uniqueId('src');
    await stack.withWorkers(() => run(source, { iterations: 1 }));
    const failure = await stack
      .withWorkers(() =>
        run(uniqueId('other'), {
          iterations: 2,
          resumeFrom: source,
          training: {
            policies: {
              [`${source}-c`]: { roles: ['challenger'] },
              [`${source}-x`]: { roles: ['reasoner'] },
            },
          },
        }),
      )
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    // The workflow fails with the start activity's non-retryable error as the cause of its cause.
    expect(String(((failure as WorkflowFailedError).cause?.cause as Error | undefined)?.message)).toMatch(
      new RegExp(
        `committed the policies ${source}-c, ${source}-r, but this config trains ${source}-c, ${source}-x`,
      ),
    );
  });
});
