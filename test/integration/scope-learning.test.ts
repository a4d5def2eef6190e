import type { LearningCurve } from '../../infra/toy-world/learning';
import type { ScopePoint } from '../../infra/toy-world/scope-learning';
import { prepareScopeWorld, warmStartScopeWorld } from '../../infra/toy-world/scope-prepare';
import { runControl } from '../support/control-run';
import { expectRolesTrained } from '../support/role-training';
import {
  evaluatedAtEnd,
  runToyWorld,
  scopeWorldRun,
  type Control,
  type WorldRun,
} from '../support/toy-world-run';

/**
 * SCOPE learns in the search world (infra/toy-world/scope-world.ts, docs/learning.md): the Challenger and the
 * Solver, two policies on two kernels started from one warm-started model, play SCOPE through its own prompts,
 * gates, rubrics and rewards, the real workflows, kernels, weight sync, storage, BM25 index and agentic
 * held-out evaluation (the Solver's search rollout on tasks about chains no training document names), with the
 * frozen judge answered by the world's rule-based grader. The figure is the held-out **rubric score**, not the
 * reward, which SCOPE's format and search terms alone can raise.
 *
 * - SCOPE must raise it, with both policies trained in every iteration (steps, loss tokens and a gradient norm
 *   per role, from each kernel's metrics in the manifest);
 * - the same run must not gain at learning rate 0 or with flipped advantages. They run only as long as their
 *   verdict needs: learning rate 0 changes nothing in 2 iterations as in 5, and flipped advantages (-5 to -7
 *   points in 3, the bench) run 3, the bar asking only that they not gain.
 *
 * The run is 15 iterations, where `npm run bench -- learning --recipe scope --warm-start-seeds 0
 * --warm-start-threads 1 --iterations 15 --set evaluation.every=15` gained +14.75 ± 4.37 points: after 5, the
 * three seeds' gains (+8.79, +7.71, +6.45, each ± about 4) sit too near the bar for a figure that moves by its
 * error, and another machine's warm start of seed 0 may be another model (its float arithmetic). The
 * random-grader control is the bench's only: its bar reads the mean over three seeds, while one seed's
 * figure moves by its error, so a bar of +1 on the one seed CI runs would fail by chance.
 */
type ScopeControl = Extract<Control, 'lr0' | 'flipped'>;

const ITERATIONS = 15;
const CONTROL_ITERATIONS: Record<ScopeControl, number> = { lr0: 2, flipped: 3 };
const MIN_GAIN_POINTS = 3;
const MAX_CONTROL_GAIN_POINTS = 1;
const ROLES = ['challenger', 'solver'];

const gain = (curve: LearningCurve<ScopePoint>): number => curve.gainPoints;

describe("SCOPE's search world", () => {
  let world: WorldRun<ScopePoint>;
  beforeAll(async () => {
    const prepared = await prepareScopeWorld();
    const trained = await warmStartScopeWorld(prepared, { threads: 1 });
    world = scopeWorldRun({ ...prepared, model: trained.model });
  }, 30 * 60_000); // a fresh machine trains the warm start first (minutes on two cores)

  test(
    "SCOPE raises the Solver's held-out rubric score with both policies trained",
    async () => {
      const scope = await runToyWorld({ world, name: 'scope-learn', overrides: evaluatedAtEnd(ITERATIONS) });
      expect(scope.points).toHaveLength(ITERATIONS);
      expectRolesTrained(scope.points, () => ROLES);
      // The Challenger writes tasks that pass both gates, and the Solver answers them.
      for (const point of scope.points) expect(point.validTasks).toBeGreaterThan(0);
      expect(gain(scope)).toBeGreaterThanOrEqual(MIN_GAIN_POINTS);
    },
    20 * 60_000,
  );

  test.each<ScopeControl>(['lr0', 'flipped'])(
    'with the control %s the same run does not gain',
    async (control) => {
      const curve = await runControl(world, `scope-${control}`, control, CONTROL_ITERATIONS[control]);
      expect(gain(curve)).toBeLessThanOrEqual(MAX_CONTROL_GAIN_POINTS);
    },
    20 * 60_000,
  );
});
