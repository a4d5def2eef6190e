import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LearningCurve } from '../infra/toy-world/learning';
import { prepareToyWorld } from '../infra/toy-world/prepare';
import { startTemporalDevServer } from '../test/support/temporal-server';
import { CONTROLS, runToyWorld, withControl, type Control } from '../test/support/toy-world-run';

/**
 * `npm run bench -- learning [--iterations K] [--seeds 0,1,2] [--control lr0|flipped] [--warm-start-steps N]`: the toy world's warm
 * start (cached after the first run), then one SPICE run of K iterations per seed on a local stack (a Temporal
 * dev server, storage in a temporary directory, the kernel, a worker process). Prints the held-out accuracy
 * per iteration, the wall time per iteration, the gain per seed with its mean and spread over seeds, and
 * last `heldout_accuracy_gain <points>` (absolute percentage points, mean over seeds).
 */
export async function main(args: string[]): Promise<void> {
  const option = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const iterations = Number(option('--iterations') ?? 6);
  const seeds = (option('--seeds') ?? '0').split(',').map(Number);
  const control = option('--control') as Control | undefined;
  if (control !== undefined && !CONTROLS.includes(control))
    throw new Error(`--control: one of ${CONTROLS.join(', ')}, not ${String(control)}`);

  // The kernels this bench starts refuse requests without a token, as in production.
  process.env.SELFPLAY_KERNEL_TOKEN ??= randomBytes(24).toString('hex');
  let t0 = Date.now();
  const steps = option('--warm-start-steps');
  const world = await prepareToyWorld(steps ? { warmStartSteps: Number(steps) } : {});
  console.log(`warm start: ${JSON.stringify(world.warmStart)}`);
  console.log(`world ready in ${((Date.now() - t0) / 1000).toFixed(1)} s (${world.dir})`);

  const scratch = mkdtempSync(path.join(os.tmpdir(), 'bench-learning-'));
  const temporal = await startTemporalDevServer({ dbFile: path.join(scratch, 'temporal.db') });
  process.env.TEMPORAL_ADDRESS = temporal.address;
  const gains: number[] = [];
  try {
    for (const seed of seeds) {
      t0 = Date.now();
      const curve = await runToyWorld({
        world,
        name: `learning-s${seed}`,
        storageUri: (runId) => path.join(scratch, 'storage', runId),
        overrides: (c) =>
          control ? withControl({ ...c, iterations, seed }, control) : { ...c, iterations, seed },
      });
      const seconds = (Date.now() - t0) / 1000;
      print(curve, seed, seconds / iterations);
      gains.push(curve.gainPoints);
    }
  } finally {
    await temporal.stop();
  }
  const mean = gains.reduce((a, b) => a + b, 0) / gains.length;
  const spread = Math.sqrt(gains.reduce((a, g) => a + (g - mean) ** 2, 0) / Math.max(1, gains.length - 1));
  console.log(`gain over ${gains.length} seed(s): mean ${mean.toFixed(2)} points, std ${spread.toFixed(2)}`);
  console.log(`heldout_accuracy_gain ${mean.toFixed(2)}`);
}

function print(curve: LearningCurve, seed: number, secondsPerIteration: number): void {
  const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
  console.log(`seed ${seed}: held-out accuracy at start ${pct(curve.startAccuracy)}`);
  for (const p of curve.points) {
    const kinds = Object.entries(p.taskKinds)
      .map(([k, share]) => `${k} ${pct(share)}`)
      .join(', ');
    const rewards = Object.entries(p.meanRewardByRole)
      .map(([role, r]) => `${role} ${r.toFixed(3)}`)
      .join(', ');
    console.log(
      `  iteration ${p.iteration}: held-out ${pct(p.heldOutAccuracy)}, valid tasks ${pct(p.validTaskRate)}, ` +
        `rewards ${rewards}, pass-rate histogram [${p.passRateHistogram.join(' ')}], task kinds ${kinds}`,
    );
  }
  console.log(
    `seed ${seed}: gain ${curve.gainPoints.toFixed(2)} points, ${secondsPerIteration.toFixed(1)} s per iteration`,
  );
}
