import { resolveRunConfig, RECIPES, type RunConfig } from '../../config/schema';
import { flatTrainMetrics, updateSpec } from '../../activities/stages/update';

const resolved = (input: object): RunConfig => {
  const r = resolveRunConfig(input);
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.config;
};

describe('training.update: how a batch becomes optimizer steps', () => {
  test("each preset takes its paper's mini-batches and role order", () => {
    const updates = Object.fromEntries(
      RECIPES.map((recipe) => [recipe, resolved({ recipe }).training.update]),
    );
    expect(updates).toEqual({
      spice: { miniBatchPrompts: 16, epochs: 1, roleOrder: [] },
      spell: { miniBatchPrompts: 'all', epochs: 1, roleOrder: [] },
      mae: { miniBatchPrompts: 64, epochs: 1, roleOrder: [] },
      ssp: { miniBatchPrompts: 128, epochs: 1, roleOrder: ['proposer', 'solver'] },
      scope: { miniBatchPrompts: 256, epochs: 1, roleOrder: [] },
    });
  });

  test('bad values are refused with their field named', () => {
    const r = resolveRunConfig({
      recipe: 'ssp',
      training: { update: { miniBatchPrompts: 0, epochs: 1.5, roleOrder: ['solver', 'solver'] } },
    });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.problems).toEqual([
      'training.update.miniBatchPrompts: Too small: expected number to be >0',
      'training.update.epochs: Invalid input: expected int, received number',
      'training.update.roleOrder: list each role once',
    ]);
  });

  test('a mini-batch is a number of prompts or "all"', () => {
    const r = resolveRunConfig({ recipe: 'mae', training: { update: { miniBatchPrompts: 'half' } } });
    expect(!r.ok && r.problems).toEqual([
      'training.update.miniBatchPrompts: expected a positive integer of prompts, or "all"',
    ]);
  });

  test('the kernel is sent an update only when it asks for more than one step over the whole batch', () => {
    expect(updateSpec(resolved({ recipe: 'spell' }).training.update)).toEqual({});
    expect(updateSpec(resolved({ recipe: 'ssp' }).training.update)).toEqual({
      update: { miniBatchPrompts: 128, epochs: 1, roleOrder: ['proposer', 'solver'] },
    });
    expect(updateSpec({ miniBatchPrompts: 'all', epochs: 2, roleOrder: [] })).toEqual({
      update: { epochs: 2, roleOrder: [] },
    });
    // A run's own "all" replaces its preset's mini-batch: one step over the whole batch.
    const whole = resolved({ recipe: 'spice', training: { update: { miniBatchPrompts: 'all' } } });
    expect(updateSpec(whole.training.update)).toEqual({});
  });

  test("the manifest keeps each role's steps and where its phase began as plain numbers", () => {
    const scalars = {
      loss: 0.5,
      kl: 0,
      clipFraction: 0,
      gradNorm: 1,
      tokens: 40,
      seconds: 2,
      optimizerSteps: 4,
    };
    const flat = flatTrainMetrics({
      ...scalars,
      entropyByRole: { proposer: 1.5 },
      stepsByRole: { proposer: 1, solver: 3 },
      firstStepByRole: { proposer: 1, solver: 2 },
      tokensByRole: { proposer: 10, solver: 30 },
      gradNormByRole: { proposer: 0.5, solver: 1.5 },
    });
    expect(flat).toEqual({
      ...scalars,
      'entropy.proposer': 1.5,
      'steps.proposer': 1,
      'steps.solver': 3,
      'firstStep.proposer': 1,
      'firstStep.solver': 2,
      'tokens.proposer': 10,
      'tokens.solver': 30,
      'gradNorm.proposer': 0.5,
      'gradNorm.solver': 1.5,
    });
  });
});
