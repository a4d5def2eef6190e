import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getJson } from '../../activities/clients/storage/codec';
import { manifestKey } from '../../activities/clients/storage/keys';
import { buildIndex } from '../../activities/retrieval/build';
import type { Manifest } from '../../contracts/selfplay';
import { selfPlayRun } from '../../workflows';
import { startStack, uniqueId, type TestStack } from '../support/stack';

const ITERATIONS = 3;

/**
 * Every recipe in both modes (`pipeline.maxStaleness` 0 and 1) on the real stack: three iterations commit in
 * order, each policy's steps apply once each from the version before, and with k = 1 later iterations train
 * on rows sampled one version back (never more).
 */
describe('every recipe, synchronous and one-step-off', () => {
  let stack: TestStack;
  let dir: string;
  const indexes: Record<string, string> = {};
  beforeAll(async () => {
    // With k = 1 the rows must carry the log-probs they were sampled with (behaviour-logprobs.ts): the
    // server returns them as vLLM does, in both modes.
    stack = await startStack({ llm: { passRate: { min: 0.2, max: 0.8 }, tokenIds: 'vllm' } });
    dir = await mkdtemp(path.join(tmpdir(), 'pipeline-recipes-'));
    for (const [name, corpus] of [
      ['ssp', 'test/fixtures/ssp/corpus.jsonl'],
      ['wiki', 'test/fixtures/corpus/wiki.jsonl'],
    ] as const) {
      indexes[name] = path.join(dir, name);
      await buildIndex({ corpus, out: indexes[name], kind: 'bm25' });
    }
  });
  afterAll(async () => {
    await stack.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Each recipe's small config, with policies of the run's own (the shared trainer versions by name). */
  const configs: Record<string, (runId: string) => Record<string, unknown>> = {
    spice: (runId) => ({ recipe: 'spice', training: { policy: runId } }),
    spell: (runId) => ({
      recipe: 'spell',
      batchSize: 6,
      shardSize: 3,
      corpus: { uri: 'test/fixtures/corpus/clusters.jsonl' },
      spell: { verifierRatio: 1, maxRounds: 1 },
      training: { policy: runId },
    }),
    mae: (runId) => ({ recipe: 'mae', batchSize: 8, groupSize: 3, training: { policy: runId } }),
    ssp: (runId) => ({
      recipe: 'ssp',
      batchSize: 10,
      shardSize: 5,
      groupSize: 5,
      retrieval: { index: indexes.ssp },
      training: { policy: runId },
    }),
    scope: (runId) => ({
      recipe: 'scope',
      batchSize: 4,
      shardSize: 2,
      groupSize: 2,
      corpus: { uri: 'test/fixtures/corpus/wiki.jsonl' },
      retrieval: { index: indexes.wiki },
      inference: {
        requestTimeoutSeconds: 10,
        maxRetries: 3,
        roles: { judge: { baseUrl: stack.llm.url, model: 'scripted-policy', frozen: true } },
      },
      training: {
        policies: { [`${runId}-c`]: { roles: ['challenger'] }, [`${runId}-s`]: { roles: ['solver'] } },
      },
      scope: { schedule: { mode: 'joint' } },
    }),
  };

  test.each(Object.keys(configs).flatMap((recipe) => [0, 1].map((k) => [recipe, k] as const)))(
    '%s with maxStaleness %i',
    async (recipe, k) => {
      const runId = uniqueId(`${recipe}-k${k}`);
      const outcome = await stack.withWorkers(() =>
        stack.client.workflow.execute(selfPlayRun, {
          workflowId: runId,
          taskQueue: `${stack.queuePrefix}-orchestrator`,
          args: [
            stack.runConfig({
              runId,
              iterations: ITERATIONS,
              ...configs[recipe]!(runId),
              pipeline: { maxStaleness: k },
            }),
          ],
        }),
      );
      expect(outcome.lastCommitted).toBe(ITERATIONS);

      const manifests: Manifest[] = [];
      for (let i = 1; i <= ITERATIONS; i++)
        manifests.push((await getJson<Manifest>(stack.store, manifestKey(runId, i)))!);
      const staleness = manifests.map((m) => m.metrics.pipeline?.staleness);
      // With k = 1, iteration 2 sampled while iteration 1 trained (iteration 1 always trains: its batch is
      // the run's first); no iteration is ever more than k behind.
      expect(staleness[0]).toBe(0);
      if (k === 0) expect(staleness).toEqual([0, 0, 0]);
      else expect(staleness[1]).toBe(1);
      for (const m of manifests) expect(m.metrics.pipeline!.staleness).toBeLessThanOrEqual(k);

      // Per policy: steps in iteration order, each from the version the previous one made, each applied once.
      const steps = stack.trainer.stats().steps.filter((s) => s.runId === runId);
      expect(steps.length).toBeGreaterThan(0);
      for (const policy of new Set(steps.map((s) => s.policy))) {
        const own = steps.filter((s) => s.policy === policy);
        expect(own.map((s) => s.baseVersion)).toEqual(own.map((_, i) => i));
        expect(own.map((s) => s.iteration)).toEqual([...own.map((s) => s.iteration)].sort((a, b) => a - b));
      }
      for (const s of steps) expect(stack.trainer.stats().appliedByKey[s.key]).toBe(1);
    },
  );
});
