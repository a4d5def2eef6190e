import { buildTinyModel } from '../support/kernel-process';
import { servedDigest, servedVersion, tinySpice, trainedVersion, withKernelRun } from '../support/kernel-run';

/**
 * SPICE one-step-off (`pipeline.maxStaleness` 1) on the real kernel's tiny model, which samples every role
 * and trains every step: iteration n+1 samples from the kernel's sampler while the same kernel trains
 * iteration n, so the sampler must serve a pinned copy of the snapshot, not the live weights.
 */
describe('SPICE with pipeline.maxStaleness 1 on the training kernel', () => {
  let model: string;
  beforeAll(() => {
    model = buildTinyModel();
  });

  test('three iterations commit in order; the sampler keeps the behaviour version while the kernel trains on', async () => {
    await withKernelRun({ model, name: 'kernel-pipelined', policies: (runId) => [runId] }, async (run) => {
      const outcome = await run.execute({
        ...run.baseConfig,
        ...tinySpice(run.runId),
        iterations: 3,
        pipeline: { maxStaleness: 1 },
      });
      expect(outcome).toMatchObject({ lastCommitted: 3, versions: { [run.runId]: 3 } });
      const manifests = [];
      for (const iteration of [1, 2, 3]) manifests.push(await run.manifest(iteration));
      const pipeline = manifests.map((m) => m?.metrics.pipeline);
      expect(pipeline.map((p) => [p?.behaviourVersions[run.runId], p?.baseVersions[run.runId]])).toEqual([
        [0, 0],
        [0, 1],
        [1, 2],
      ]);
      // The kernel read each row's version and trained on rows one version behind, within the bound it was sent.
      expect(manifests.map((m) => m?.metrics.train[run.runId]?.maxRowStaleness)).toEqual([0, 1, 1]);
      const kernel = run.kernels[run.runId]!;
      expect(await trainedVersion(kernel, run.runId)).toBe(3);
      // Iteration 3 sampled version 1, pinned: the live policy (3) was never served to it.
      expect(await servedVersion(kernel, run.runId)).toBe(1);
      // The copy is of the weights version 1's commit names: the digest its publish answered.
      const committed = (await run.manifest(1))?.policies[run.runId]?.snapshot?.sha256;
      expect(committed).toMatch(/^[0-9a-f]{64}$/);
      expect(await servedDigest(kernel, run.runId)).toBe(committed);
    });
    // A real kernel samples and trains three iterations: 106-209 s measured on a loaded 2-core machine.
  }, 600_000);
});
