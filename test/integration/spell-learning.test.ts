import { prepareSpellWorld, type SpellWorld } from '../../infra/toy-world/spell-prepare';
import { runControl, runEvaluatedAtEnd } from '../support/control-run';
import { expectRolesTrained } from '../support/role-training';
import { spellWorldRun, type Control } from '../support/toy-world-run';

/**
 * SPELL learns over documents (infra/toy-world/spell-world.ts, docs/learning.md): the warm-started model
 * questions one fact sheet of a cluster, answers with the whole cluster in context and verifies the answers,
 * through SPELL's own prompts, parsers, rule check and rewards, the real workflows, kernel, weight sync,
 * storage and held-out evaluation (SPELL's responder prompt over clusters of depots no trained text names, at
 * the paper's T = 0.7). The responder's reward is the better of the rule check against the questioner's
 * reference and the model's own verifier majority, so:
 *
 * - SPELL must raise held-out accuracy, with the questioner and the responder trained in every iteration and
 *   the verifier in every iteration it has groups (steps, loss tokens and a gradient norm per role, from the
 *   kernel's metrics in the manifest), and a verifier that agrees with the rule check on most of its votes;
 * - the same run must not gain at learning rate 0 or with flipped advantages. They run only as long as their
 *   verdict needs: learning rate 0 changes nothing in 3 iterations as in 40, and flipped advantages run 4, the
 *   bar asking only that they not gain.
 *
 * The run is 40 iterations, where `npm run bench -- learning --recipe spell --warm-start-seeds 0,1,2
 * --warm-start-threads 1 --iterations 40 --set evaluation.every=20` gained +6.91, +7.85 and +13.59 points (each
 * ± about 1) on the three seeds; after 20 they stood at +4.73, +0.40 and +10.6, too near a bar for a seed that
 * gains late. Another machine's warm start of seed 0 may be another model (its float arithmetic), so the bar
 * is well under what all three seeds gained. The frozen-verifier control is the bench's only: it asks that the
 * verifier's agreement stay flat, a reading over three seeds of 40 iterations.
 */
type SpellControl = Extract<Control, 'lr0' | 'flipped'>;

const ITERATIONS = 40;
const CONTROL_ITERATIONS: Record<SpellControl, number> = { lr0: 3, flipped: 4 };
const MIN_GAIN_POINTS = 3;
const MAX_CONTROL_GAIN_POINTS = 1;
const MIN_VERIFIER_RULE_AGREEMENT = 0.7;

describe("SPELL's toy world", () => {
  let world: SpellWorld;
  beforeAll(async () => {
    world = await prepareSpellWorld({ threads: 1 });
  }, 60 * 60_000); // a fresh machine trains the warm start first (minutes on two cores)

  test(
    'SPELL raises held-out accuracy with every role trained and the model verifying itself',
    async () => {
      const spell = await runEvaluatedAtEnd(spellWorldRun(world), 'spell-learn', ITERATIONS);
      expectRolesTrained(spell.points, (p) =>
        p.verifierGroups > 0 ? ['questioner', 'responder', 'verifier'] : ['questioner', 'responder'],
      );
      // The verifier trains: its groups are those whose majority agrees with the rule and is not unanimous.
      expect(spell.points.some((p) => p.verifierGroups > 0)).toBe(true);
      for (const { iteration, validTaskRate, verifierRuleAgreement } of spell.points) {
        expect({ iteration, questions: validTaskRate > 0 }).toEqual({ iteration, questions: true });
        expect({ iteration, agrees: verifierRuleAgreement > MIN_VERIFIER_RULE_AGREEMENT }).toEqual({
          iteration,
          agrees: true,
        });
      }
      expect(spell.gainPoints).toBeGreaterThanOrEqual(MIN_GAIN_POINTS);
    },
    30 * 60_000,
  );

  test.each<SpellControl>(['lr0', 'flipped'])(
    'with the control %s the same run does not gain',
    async (control) => {
      const curve = await runControl(
        spellWorldRun(world),
        `spell-${control}`,
        control,
        CONTROL_ITERATIONS[control],
      );
      expect(curve.gainPoints).toBeLessThanOrEqual(MAX_CONTROL_GAIN_POINTS);
    },
    20 * 60_000,
  );
});
