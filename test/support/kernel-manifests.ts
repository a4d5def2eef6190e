import type { Manifest } from '../../contracts/selfplay';
import { servedVersion, trainedVersion, type KernelRun } from './kernel-run';

/** What a run on training kernels left in its manifests and kernels, checked the same way by every kernel test. */

/** The run committed every iteration, in order: each manifest names its iteration and follows the one before. */
export async function committedInOrder(
  run: KernelRun,
  lastCommitted: number,
  iterations: number,
): Promise<Manifest[]> {
  expect(lastCommitted).toBe(iterations);
  const manifests: Manifest[] = [];
  for (let i = 1; i <= iterations; i++) {
    const manifest = await run.manifest(i);
    expect(manifest?.iteration).toBe(i);
    manifests.push(manifest!);
  }
  const times = manifests.map((m) => Date.parse(m.committedAt));
  expect(times).toEqual([...times].sort((a, b) => a - b));
  return manifests;
}

/** `policy`'s committed version after each iteration. */
export const versionsOf = (manifests: readonly Manifest[], policy: string): number[] =>
  manifests.map((m) => m.policies[policy]?.version ?? -1);

/**
 * Each iteration trained from the version the previous one committed; synchronous it also sampled that one,
 * one-step-off it sampled the commit before (iteration n+1 starts sampling as soon as n's rollouts are done,
 * beside n's training), never more than one version behind.
 */
export function expectPipeline(manifests: readonly Manifest[], policy: string, k: number): void {
  const committed = [0, ...versionsOf(manifests, policy)];
  manifests.forEach((m, i) => {
    const pipeline = m.metrics.pipeline;
    expect(pipeline?.maxStaleness).toBe(k);
    expect(pipeline?.baseVersions[policy]).toBe(committed[i]);
    expect(pipeline?.behaviourVersions[policy]).toBe(committed[k === 0 ? i : Math.max(0, i - 1)]);
  });
}

/**
 * The kernel trained `policy` to its last committed version and published every committed version; its sampler
 * serves that version when synchronous, and one-step-off the pinned version the last iteration sampled.
 */
export async function expectKernelAt(
  run: KernelRun,
  policy: string,
  manifests: readonly Manifest[],
  k: number,
): Promise<void> {
  const last = manifests.at(-1)!;
  const version = last.policies[policy]!.version;
  const kernel = run.kernels[policy]!;
  expect(await trainedVersion(kernel, policy)).toBe(version);
  expect(await servedVersion(kernel, policy)).toBe(
    k === 0 ? version : last.metrics.pipeline?.behaviourVersions[policy],
  );
  expect(last.policies[policy]?.snapshot?.version).toBe(version);
}

/** The manifest's training metrics for `policy`: a real step, on the sampled ids of every row. */
export function expectTrainedExactly(manifest: Manifest, policy: string): void {
  const train = manifest.metrics.train[policy];
  expect(train).toMatchObject({ rowsRetokenized: 0, tokenExactFraction: 1 });
  expect(train?.tokens).toBeGreaterThan(0);
}
