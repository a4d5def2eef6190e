import { prepareToyWorld, type ToyWorld } from '../../infra/toy-world/prepare';
import type { LearningCurve } from '../../infra/toy-world/learning';
import { runToyWorld, withControl } from '../support/toy-world-run';

/**
 * Self-play learns, and the test could tell if it did not: SPICE on the toy world (infra/toy-world), through
 * the real workflows, kernel, weight sync and storage, from a warm-started model, raises the Reasoner's
 * held-out accuracy by more than its seed-to-seed noise; and two negative controls, learning rate 0 and
 * advantages with their sign flipped, do not. A sign error between advantage and loss, rows trained under the
 * wrong role, a prompt rendered differently for sampling and training, or a sync that serves the wrong
 * version each turn the first assertion red, or one of the controls.
 *
 * The margins come from `npm run bench -- learning` over several seeds (docs/learning.md): the gain's
 * seed-to-seed spread and the held-out set's sampling noise (240 items x 4 samples).
 */
const ITERATIONS = 6;
/** Percentage points: the gain must exceed this (well above the noise measured over seeds). */
const MIN_GAIN = 8;
/** Percentage points: what a run that does not learn may move by (sampling noise of the evaluation). */
const NOISE = 4;

describe('self-play learns in the toy world', () => {
  let world: ToyWorld;
  beforeAll(async () => {
    world = await prepareToyWorld();
  }, 30 * 60_000);

  const run = (name: string, edit: (c: Record<string, unknown>) => Record<string, unknown> = (c) => c) =>
    runToyWorld({ world, name, overrides: (c) => edit({ ...c, iterations: ITERATIONS }) });
  const describeCurve = (c: LearningCurve): string =>
    `${c.runId}: ${(100 * c.startAccuracy).toFixed(1)}% -> ` +
    c.points.map((p) => `${(100 * p.heldOutAccuracy).toFixed(1)}%`).join(' -> ');

  test(
    'held-out accuracy rises; at learning rate 0 and with flipped advantages it does not',
    async () => {
      const learned = await run('learn');
      const frozen = await run('lr0', (c) => withControl(c, 'lr0'));
      const flipped = await run('flipped', (c) => withControl(c, 'flipped'));
      for (const curve of [learned, frozen, flipped]) console.log(describeCurve(curve));

      expect(learned.gainPoints).toBeGreaterThan(MIN_GAIN);
      expect(Math.abs(frozen.gainPoints)).toBeLessThan(NOISE);
      expect(flipped.gainPoints).toBeLessThan(NOISE);
      // Every run started from the same warm-started weights.
      expect(frozen.startAccuracy).toBeCloseTo(learned.startAccuracy, 6);
      expect(flipped.startAccuracy).toBeCloseTo(learned.startAccuracy, 6);
    },
    60 * 60_000,
  );
});
