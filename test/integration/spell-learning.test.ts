import type { LearningCurve } from '../../infra/toy-world/learning';
import type { SpellPoint } from '../../infra/toy-world/spell-learning';
import { prepareSpellWorld, type SpellWorld } from '../../infra/toy-world/spell-prepare';
import { expectRolesTrained } from '../support/role-training';
import { runToyWorld, spellWorldRun, withControl, type Control } from '../support/toy-world-run';

/**
 * SPELL's toy world end to end (infra/toy-world/spell-world.ts, docs/learning.md): the warm-started model
 * questions, responds over a cluster's fact sheets and verifies, through SPELL's own prompts, parsers, rule
 * check and rewards, the real workflows, kernel, weight sync, storage and held-out evaluation (the
 * responder's accuracy on unseen clusters, at SPELL's T = 0.7 and top-p 0.95). That the held-out clusters
 * name no depot anything trained on names is asserted by test/unit/toy-world-spell.test.ts.
 *
 * SPELL must raise held-out accuracy with every role trained in every iteration (steps, loss tokens and a
 * gradient per role, from the kernel's metrics in the manifest); at learning rate 0 and with flipped
 * advantages the same run must not gain; with the verifier frozen (no verifier rows trained) its agreement
 * with the rule check must stay where the warm start left it, while SPELL's own rises.
 */
const ITERATIONS = 20;
const MIN_GAIN_POINTS = 3;
const MAX_CONTROL_GAIN_POINTS = 1;
const MAX_FROZEN_AGREEMENT_DRIFT = 0.03;

const run = (world: SpellWorld, name: string, control?: Control): Promise<LearningCurve<SpellPoint>> =>
  runToyWorld({
    world: spellWorldRun(world),
    name,
    overrides: (c) => {
      const edited = { ...c, iterations: ITERATIONS };
      return control ? withControl(edited, control) : edited;
    },
  });

/** The verifier's agreement with the rule check over the first and the last `k` iterations. */
const agreement = (curve: LearningCurve<SpellPoint>, k = 4): { first: number; last: number } => {
  const mean = (ps: ReadonlyArray<{ verifierRuleAgreement: number }>): number =>
    ps.reduce((a, p) => a + p.verifierRuleAgreement, 0) / ps.length;
  return { first: mean(curve.points.slice(0, k)), last: mean(curve.points.slice(-k)) };
};

/**
 * Skipped until the warm start reaches its targets: on the 2-core machine, warm-start seed 0 of the current
 * world (lookups over three sheets) left the responder's greedy answers right on 12 % of the validation
 * clusters after its first 4,000-step cycle (docs/learning.md), where the bars above need a responder whose
 * greedy answer is mostly right and whose samples are not. The bars are the issue's, not yet measured on
 * this world, and the warm start alone takes longer than the 5 minutes CI can give this test.
 */
describe.skip("SPELL's toy world", () => {
  let world: SpellWorld;
  beforeAll(async () => {
    world = await prepareSpellWorld({ threads: 1 });
  }, 30 * 60_000); // a fresh machine trains the warm start first (minutes on two cores)

  test(
    'SPELL raises held-out accuracy with every role trained; at learning rate 0 or flipped it does not',
    async () => {
      const spell = await run(world, 'spell-learn');
      expect(spell.points).toHaveLength(ITERATIONS);
      expectRolesTrained(spell.points, () => ['questioner', 'responder', 'verifier']);
      expect(spell.gainPoints).toBeGreaterThanOrEqual(MIN_GAIN_POINTS);
      for (const control of ['lr0', 'flipped'] as const) {
        const curve = await run(world, `spell-${control}`, control);
        expect({ control, gained: curve.gainPoints <= MAX_CONTROL_GAIN_POINTS }).toEqual({
          control,
          gained: true,
        });
      }
    },
    30 * 60_000,
  );

  test(
    "with the verifier frozen its agreement with the rule stays flat; SPELL's own rises",
    async () => {
      const spell = agreement(await run(world, 'spell-verifier'));
      const frozen = await run(world, 'spell-frozen-verifier', 'frozen-verifier');
      expect(frozen.points.every((p) => (p.trained['verifier']?.steps ?? 0) === 0)).toBe(true);
      const flat = agreement(frozen);
      expect(Math.abs(flat.last - flat.first)).toBeLessThanOrEqual(MAX_FROZEN_AGREEMENT_DRIFT);
      expect(spell.last).toBeGreaterThan(spell.first);
    },
    30 * 60_000,
  );
});
