import type { LearningCurve } from '../../infra/toy-world/learning';
import { evaluatedAtEnd, runToyWorld, type Control, type WorldRun } from './toy-world-run';

/**
 * A learning test's control: the world's run named `name` under `control`, for only the `iterations` its
 * verdict needs, evaluated at its start and after its last iteration, every iteration committed. The caller
 * bars the gain (a control must not learn) and checks what else the control promises.
 */
export async function runControl<W>(
  world: WorldRun<W>,
  name: string,
  control: Control,
  iterations: number,
): Promise<LearningCurve<W>> {
  const curve = await runToyWorld({ world, name, overrides: evaluatedAtEnd(iterations), control });
  expect(curve.points).toHaveLength(iterations);
  return curve;
}
