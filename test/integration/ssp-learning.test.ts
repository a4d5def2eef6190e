import type { LearningCurve } from '../../infra/toy-world/learning';
import type { SspPoint } from '../../infra/toy-world/ssp-learning';
import { prepareSspWorld, randomSearchIndex, warmStartSspWorld } from '../../infra/toy-world/ssp-prepare';
import { runControl } from '../support/control-run';
import { expectRolesTrained } from '../support/role-training';
import {
  evaluatedAtEnd,
  runToyWorld,
  sspWorldRun,
  type Control,
  type WorldRun,
} from '../support/toy-world-run';

/**
 * SSP learns in its search world (infra/toy-world/ssp-world.ts, docs/learning.md): the proposer writes questions
 * backwards from answers by searching, the solver answers them by searching, through SSP's own prompts, rule
 * filter, RAG verification, rewards and replay pool, the real workflows, kernel, weight sync, storage, BM25
 * index and agentic held-out evaluation (the solver's search rollout on questions about chains no training
 * document names), with the RAG verifier and the judge answered by the world's rule-based grader.
 *
 * - SSP must raise the solver's held-out accuracy, with both roles trained in every iteration (steps, loss
 *   tokens and a gradient norm per role, from the kernel's metrics in the manifest) and RAG-verified questions
 *   in each;
 * - the same run must not gain at learning rate 0, with flipped advantages, or with a search tool that returns
 *   unrelated passages. They run only as long as their verdict needs: learning rate 0 changes nothing in 2
 *   iterations as in 10; flipped advantages lose 21-28 points in 10 (the bench) and run 3; random search
 *   verifies no question, so nothing trains, in 2 as in 10.
 *
 * The bar (3 points, as SPICE's and SCOPE's tests) sits well inside what `npm run bench -- learning --recipe ssp
 * --warm-start-seeds 0,1,2 --iterations 10` measured on one thread (+10.29, +20.31, +9.64, each ± about 1.9) and
 * on two (+14.71, +17.32, +6.12): another machine's warm start of seed 0 may be another model (its float
 * arithmetic), the weakest of those six gained 6.12 ± 1.61, and a run is not bit-reproducible (the sampler
 * batches requests as they arrive). The bar of 5 is the bench's, on the mean over three seeds.
 */
type SspControl = Extract<Control, 'lr0' | 'flipped' | 'random-search'>;

const ITERATIONS = 10;
const CONTROL_ITERATIONS: Record<SspControl, number> = { lr0: 2, flipped: 3, 'random-search': 2 };
const MIN_GAIN_POINTS = 3;
const MAX_CONTROL_GAIN_POINTS = 1;
const ROLES = ['proposer', 'solver'];

const gain = (curve: LearningCurve<SspPoint>): number => curve.gainPoints;

describe("SSP's search world", () => {
  let world: WorldRun<SspPoint>;
  beforeAll(async () => {
    const prepared = await prepareSspWorld();
    const trained = await warmStartSspWorld(prepared, { threads: 1 });
    world = sspWorldRun({
      ...prepared,
      model: trained.model,
      randomSearchIndex: await randomSearchIndex(prepared),
    });
  }, 30 * 60_000); // a fresh machine trains the warm start first (6-8 minutes on two cores)

  test(
    "SSP raises the solver's held-out accuracy with both roles trained",
    async () => {
      const ssp = await runToyWorld({ world, name: 'ssp-learn', overrides: evaluatedAtEnd(ITERATIONS) });
      expect(ssp.points).toHaveLength(ITERATIONS);
      expectRolesTrained(ssp.points, () => ROLES);
      // The proposer's questions pass RAG verification, and the solver answers them.
      for (const point of ssp.points) expect(point.ragVerified).toBeGreaterThan(0);
      expect(gain(ssp)).toBeGreaterThanOrEqual(MIN_GAIN_POINTS);
    },
    20 * 60_000,
  );

  test.each<SspControl>(['lr0', 'flipped', 'random-search'])(
    'with the control %s the same run does not gain',
    async (control) => {
      const curve = await runControl(world, `ssp-${control}`, control, CONTROL_ITERATIONS[control]);
      expect(gain(curve)).toBeLessThanOrEqual(MAX_CONTROL_GAIN_POINTS);
    },
    20 * 60_000,
  );
});
