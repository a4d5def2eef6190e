import type { LearningCurve } from '../../infra/toy-world/learning';
import { evaluatedAtEnd, runToyWorld, type Control, type WorldRun } from './toy-world-run';

/**
 * A learning test's run: the world's run named `name`, `iterations` long (under `control`, if any), evaluated
 * at its start and after its last iteration, every iteration committed. The caller bars the gain and checks
 * what else the run promises.
 */
export async function runEvaluatedAtEnd<W>(
  world: WorldRun<W>,
  name: string,
  iterations: number,
  control?: Control,
): Promise<LearningCurve<W>> {
  const curve = await runToyWorld({
    world,
    name,
    overrides: evaluatedAtEnd(iterations),
    ...(control ? { control } : {}),
  });
  expect(curve.points).toHaveLength(iterations);
  return curve;
}

/** A learning test's control, run only for the `iterations` its verdict needs (a control must not learn). */
export const runControl = <W>(
  world: WorldRun<W>,
  name: string,
  control: Control,
  iterations: number,
): Promise<LearningCurve<W>> => runEvaluatedAtEnd(world, name, iterations, control);
