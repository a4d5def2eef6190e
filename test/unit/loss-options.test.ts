import { resolveRunConfig, RECIPES, type RunConfig } from '../../config/schema';
import { lossSpec } from '../../activities/stages/update';

const resolved = (input: object): RunConfig => {
  const r = resolveRunConfig(input);
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.config;
};

describe('training.loss off-policy options: dual-clip, k3 clamp, the off-policy correction', () => {
  test('every preset leaves them off when synchronous, and the kernel is sent the loss it was sent before', () => {
    for (const recipe of RECIPES) {
      const loss = resolved({ recipe }).training.loss;
      expect(loss).toMatchObject({
        dualClip: 'off',
        k3Clamp: 'off',
        offPolicy: 'ppo_ratio',
        importanceCap: 2,
      });
      const spec = lossSpec(loss);
      expect(Object.keys(spec).sort()).toEqual(
        ['type', 'normalization', 'normalizerConstant', 'clipLow', 'clipHigh', 'klCoef']
          .concat(loss.entropyCoef > 0 ? ['entropyCoef'] : [])
          .sort(),
      );
    }
  });

  test('one-step-off defaults to tis, synchronous to ppo_ratio; what the run sets wins either way', () => {
    const offPolicy = (input: object) => resolved({ recipe: 'spice', ...input }).training.loss.offPolicy;
    const set = (value: string) => ({ loss: { offPolicy: value } });
    for (const recipe of RECIPES) {
      const loss = resolved({ recipe, pipeline: { maxStaleness: 1 } }).training.loss;
      expect(lossSpec(loss)).toMatchObject({ offPolicy: 'tis', importanceCap: 2 });
      // The rest of the preset's loss is kept.
      expect({ ...loss, offPolicy: 'ppo_ratio' }).toEqual(resolved({ recipe }).training.loss);
    }
    expect(offPolicy({ pipeline: { maxStaleness: 0 } })).toBe('ppo_ratio');
    expect(offPolicy({ pipeline: { maxStaleness: 3 } })).toBe('tis');
    expect(offPolicy({ pipeline: { maxStaleness: 1 }, training: set('ppo_ratio') })).toBe('ppo_ratio');
    expect(offPolicy({ pipeline: { maxStaleness: 0 }, training: set('tis') })).toBe('tis');
    // A staleness the schema refuses is named by it, not derived from.
    expect(resolveRunConfig({ recipe: 'spice', pipeline: { maxStaleness: 'one' } })).toMatchObject({
      ok: false,
      problems: [expect.stringMatching(/^pipeline\.maxStaleness: /)],
    });
  });

  test('options that are on are sent, tis with its cap', () => {
    const loss = resolved({
      recipe: 'spice',
      training: { loss: { dualClip: 3, k3Clamp: 10, offPolicy: 'tis', importanceCap: 5 } },
    }).training.loss;
    expect(lossSpec(loss)).toMatchObject({ dualClip: 3, k3Clamp: 10, offPolicy: 'tis', importanceCap: 5 });
  });

  test('bad values are refused with their field named', () => {
    const r = resolveRunConfig({
      recipe: 'spice',
      training: { loss: { dualClip: 1, k3Clamp: 0, offPolicy: 'vtrace', importanceCap: 0.5 } },
    });
    expect(!r.ok && r.problems).toEqual([
      'training.loss.dualClip: Too small: expected number to be >1',
      'training.loss.k3Clamp: Too small: expected number to be >0',
      'training.loss.offPolicy: Invalid option: expected one of "ppo_ratio"|"tis"',
      'training.loss.importanceCap: Too small: expected number to be >=1',
    ]);
    const word = resolveRunConfig({ recipe: 'spice', training: { loss: { dualClip: 'on' } } });
    expect(!word.ok && word.problems).toEqual([
      'training.loss.dualClip: expected a number above 1, or "off"',
    ]);
    const reinforce = resolveRunConfig({
      recipe: 'spice',
      training: { loss: { type: 'reinforce', dualClip: 3 } },
    });
    expect(!reinforce.ok && reinforce.problems).toEqual([
      'training.loss.dualClip: dual-clip caps the PPO surrogate: it needs type ppo_clip',
    ]);
  });
});
