import { resolveRunConfig } from '../../../config/schema';
import { configFor } from '../../support/recipe-harness';

describe('MAE run config', () => {
  test('the preset: the paper’s constants (§2.5) and the half-reference setting', () => {
    const c = configFor({ recipe: 'mae' });
    expect(c).toMatchObject({
      batchSize: 128,
      groupSize: 5,
      iterations: 300,
      judgePool: 'rollout',
      sampling: { temperature: 1, topP: 1, maxTokens: 8192 },
      training: {
        estimator: 'reinforce_pp',
        loss: { type: 'ppo_clip', normalization: 'token_mean', klCoef: 0, entropyCoef: 0.001 },
        optimizer: { learningRate: 1e-6, maxGradNorm: 1, schedule: 'constant' },
      },
    });
    expect(c.mae).toMatchObject({
      referenceRatio: 0.5,
      qualityThreshold: 0.7,
      scoreMapping: '(x-1)/9',
      difficulty: 'linear',
      zeroDifficultyWhenRejected: false,
      qualityFilter: true,
      formatReward: true,
      trainRoles: { proposer: true, solver: true, judge: true },
      poolCap: 10000,
    });
    expect(c.mae.seedQuestions).toBeUndefined();
    expect(c.mae.proposerWeights.quality).toBeCloseTo(1 / 3, 12);
    expect(c.mae.solverWeights).toEqual({ judge: 0.5, format: 0.5 });
  });

  test('the four settings are a seed file and a reference ratio', () => {
    for (const referenceRatio of [0, 0.5, 1]) {
      const r = resolveRunConfig({
        recipe: 'mae',
        mae: { referenceRatio, seedQuestions: 's3://bucket/seeds.jsonl' },
      });
      expect(r.ok).toBe(true);
    }
  });

  test('bad fields are named', () => {
    const r = resolveRunConfig({
      recipe: 'mae',
      mae: { referenceRatio: 2, scoreMapping: 'x', trainRoles: { critic: true }, seedQuestions: '' },
    });
    expect(r.ok).toBe(false);
    const problems = r.ok ? [] : r.problems.join('\n');
    for (const field of ['mae.referenceRatio', 'mae.scoreMapping', 'mae.trainRoles', 'mae.seedQuestions'])
      expect(problems).toContain(field);
  });
});
