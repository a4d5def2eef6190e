import { Connection } from '@temporalio/client';
import { getJson } from '../../activities/clients/storage/codec';
import { latestKey, manifestKey, snapshotPrefix } from '../../activities/clients/storage/keys';
import { openStore } from '../../activities/clients/storage';
import type { Manifest } from '../../contracts/selfplay';
import { selfPlayRun } from '../../workflows';
import { queueNames } from '../../workers/pools';
import {
  buildTinyModel,
  kernelAuth,
  kernelToken,
  startKernel,
  type KernelProcess,
} from '../support/kernel-process';
import {
  miniBatchedSpice,
  promptCount,
  servedVersion,
  tinySpice,
  withKernelRun,
} from '../support/kernel-run';
import { spawnWorker } from '../support/worker-process';
import { uniqueId } from '../support/stack';
import { waitFor } from '../support/wait';
import { temporalClient } from '../support/temporal-client';

/**
 * SPICE on the real kernel: a tiny locally built model samples every role and trains on every step
 * (`tinySpice`), and versioned snapshots are published and loaded by the kernel's sampler. Then the kernel and
 * the worker are SIGKILLed after a commit; the restarted kernel starts from the base weights, the run restores
 * the committed checkpoint, and no step is applied twice.
 */
describe('SPICE on the training kernel', () => {
  const bucket = process.env.SELFPLAY_TEST_BUCKET as string;
  let model: string;
  beforeAll(() => {
    model = buildTinyModel();
  });

  test('3 iterations with real sampling, training, publishing and a kernel + worker crash in between', async () => {
    const runId = uniqueId('kernel');
    const prefix = uniqueId('kq');
    const storageUri = `s3://${bucket}/${runId}`;
    const store = openStore(storageUri);
    const address = process.env.TEMPORAL_ADDRESS as string;
    let kernel: KernelProcess = await startKernel({ model, policy: runId });
    const env = () => ({
      TEMPORAL_ADDRESS: address,
      SELFPLAY_QUEUE_PREFIX: prefix,
      SELFPLAY_STORAGE: storageUri,
      SELFPLAY_INFERENCE_URL: `${kernel.url}/v1`,
      SELFPLAY_INFERENCE_MODEL: runId,
      SELFPLAY_INFERENCE_API_KEY: kernelToken(),
      SELFPLAY_TRAINER_URL: kernel.url,
    });
    const config = {
      ...tinySpice(runId),
      iterations: 3,
      weightSync: { engine: 'kernel' },
      pools: queueNames(prefix),
      inference: { requestTimeoutSeconds: 120, maxRetries: 3 },
      timeouts: { heartbeatSeconds: 10, activityMaxAttempts: 10 },
    };
    const connection = await Connection.connect({ address });
    let worker = spawnWorker(env());
    try {
      const handle = await temporalClient(connection).workflow.start(selfPlayRun, {
        workflowId: runId,
        taskQueue: config.pools.orchestrator,
        args: [config],
      });
      await waitFor(
        'iteration 2 committed',
        async () => ((await getJson<{ iteration: number }>(store, latestKey(runId)))?.iteration ?? 0) >= 2,
        240_000,
        200,
      );
      await Promise.all([worker.stop('SIGKILL'), kernel.stop('SIGKILL')]);
      kernel = await startKernel({ model, policy: runId });
      worker = spawnWorker(env());
      const outcome = await handle.result();

      expect(outcome).toMatchObject({ lastCommitted: 3, versions: { [runId]: 3 } });
      // The restarted kernel was restored to version 2 and trained once more: no step applied twice.
      const state = (await (
        await fetch(`${kernel.url}/v1/policies/${runId}`, { headers: kernelAuth() })
      ).json()) as {
        policyVersion: number;
      };
      expect(state.policyVersion).toBe(3);
      const models = (await (await fetch(`${kernel.url}/v1/models`, { headers: kernelAuth() })).json()) as {
        data: Array<{ id: string; weight_version: number }>;
      };
      // The sampler serves the version last synced to it: v2, loaded after the restart, unless it serves the
      // live policy (v3). Nothing syncs it to v3 before a next iteration would sample.
      expect([2, 3]).toContain(models.data.find((m) => m.id === runId)?.weight_version);

      for (const iteration of [1, 2, 3]) {
        const manifest = await getJson<Manifest>(store, manifestKey(runId, iteration));
        const policy = manifest?.policies[runId];
        expect(policy).toMatchObject({ version: iteration, snapshot: { version: iteration, policy: runId } });
        expect(policy?.checkpointUri).toContain(`v${String(iteration).padStart(6, '0')}`);
        // A real update: REINFORCE on the ρ-rewarded trajectories has a gradient.
        expect(manifest?.metrics.train[runId]?.gradNorm).toBeGreaterThan(0);
        expect(manifest?.metrics.train[runId]?.tokens).toBeGreaterThan(0);
        // The kernel measures the policy's entropy over the loss tokens, overall and per row role.
        const train = manifest?.metrics.train[runId] ?? {};
        const byRole = Object.keys(train).filter((k) => k.startsWith('entropy.'));
        expect(byRole.length).toBeGreaterThan(0);
        for (const key of ['entropy', ...byRole]) expect(train[key]).toBeGreaterThan(0);
        // Token in, token out: the kernel's sampler returned its ids, and every row was trained on them.
        expect(train).toMatchObject({ rowsRetokenized: 0, tokenExactFraction: 1 });
      }
      // Every version the servers were synced to was published completely, version 0 included.
      for (const version of [0, 1, 2, 3]) {
        expect(await store.exists(`${snapshotPrefix(runId, runId, version)}/COMPLETE`)).toBe(true);
      }
    } finally {
      await Promise.all([worker.stop('SIGKILL'), kernel.stop('SIGKILL')]);
      await connection.close();
    }
  }, 600_000);

  /**
   * A mini-batched update on the real kernel: with one prompt per mini-batch, each iteration's batch is as
   * many optimizer steps as it has prompts, all in one policy version, and the manifest says how many.
   */
  test(
    'mini-batched updates: one optimizer step per prompt, one version per iteration',
    () =>
      withKernelRun({ model, name: 'kernel-minibatch', policies: (runId) => [runId] }, async (run) => {
        const outcome = await run.execute({
          ...run.baseConfig,
          ...miniBatchedSpice(run.runId),
          iterations: 2,
        });
        expect(outcome).toMatchObject({ lastCommitted: 2, versions: { [run.runId]: 2 } });
        for (const iteration of [1, 2]) {
          const rows = await run.rows(iteration, run.runId);
          const prompts = promptCount(rows);
          expect(rows.every((r) => r.completionTokens && r.behaviourLogprobs)).toBe(true);
          expect(prompts).toBeGreaterThanOrEqual(3);
          const manifest = await run.manifest(iteration);
          expect(manifest?.policies[run.runId]?.version).toBe(iteration);
          const train = manifest?.metrics.train[run.runId];
          expect(train).toMatchObject({ optimizerSteps: prompts, skippedSteps: 0 });
          expect(train?.gradNorm).toBeGreaterThan(0);
          expect(train?.clipFraction).toBeGreaterThanOrEqual(0);
        }
        expect(await servedVersion(run.kernels[run.runId]!, run.runId)).toBe(2);
      }),
    600_000,
  );

  /**
   * SPELL and MAE through the real kernel for one iteration each: every role samples from the tiny model and
   * the iteration commits with whatever its random outputs earn (a questioner that writes no valid JSON gives
   * SPELL an empty batch, so no step; MAE's solver and judge rows train).
   */
  test.each([
    [
      'spell',
      {
        corpus: { uri: 'test/fixtures/corpus/clusters.jsonl', maxSegmentChars: 400 },
        spell: { responderGroups: 2 },
      },
    ],
    ['mae', { mae: { referenceRatio: 0.5 } }],
  ])(
    'one iteration of %s on the tiny model',
    (recipe, overrides) =>
      withKernelRun({ model, name: `kernel-${recipe}`, policies: (runId) => [runId] }, async (run) => {
        const outcome = await run.execute({
          ...run.baseConfig,
          recipe,
          batchSize: 2,
          shardSize: 2,
          groupSize: 2,
          sampling: { maxTokens: 16 },
          training: { policy: run.runId },
          ...overrides,
        });
        expect(outcome.lastCommitted).toBe(1);
        const manifest = await run.manifest(1);
        expect(manifest?.recipe).toBe(recipe);
        const rows = Object.values(manifest?.metrics.recipe.rowsByRole ?? {}).reduce((a, b) => a + b, 0);
        // A step was applied exactly when there were rows to train on, and the kernel serves that version.
        const policy = manifest?.policies[run.runId];
        expect(policy?.version).toBe(rows > 0 ? 1 : 0);
        expect(await servedVersion(run.kernels[run.runId]!, run.runId)).toBe(policy?.version);
        expect(policy?.snapshot?.version).toBe(policy?.version);
        // Whatever was trained on was token-exact (an empty batch takes no step and reports nothing).
        expect(manifest?.metrics.train[run.runId]?.rowsRetokenized ?? 0).toBe(0);
        expect(manifest?.metrics.train[run.runId]?.tokenExactFraction ?? 1).toBe(1);
      }),
    600_000,
  );
});
