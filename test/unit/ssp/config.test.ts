import { resolveRunConfig } from '../../../config/schema';
import { configFor } from '../../support/recipe-harness';

describe('SSP run config (ssp.md §3, Table 4)', () => {
  test('the preset', () => {
    const c = configFor({ recipe: 'ssp' });
    expect(c).toMatchObject({
      batchSize: 256,
      groupSize: 5,
      judgePool: 'rollout',
      sampling: { temperature: 1, maxTokens: 8192 },
      retrieval: { topK: 3 },
      training: {
        estimator: 'grpo',
        loss: { type: 'ppo_clip', normalization: 'token_mean', clipLow: 0.2, clipHigh: 0.285, klCoef: 0.01 },
        optimizer: { learningRate: 1e-6, schedule: 'warmup_constant', warmupSteps: 5 },
      },
    });
    expect(c.iterations).toBeGreaterThanOrEqual(150);
    expect(c.iterations).toBeLessThanOrEqual(200);
    expect(c.ssp).toMatchObject({
      maxTurns: 10,
      proposerTemperature: 1,
      rules: {
        minChars: 10,
        maxChars: 1000,
        minWords: 10,
        minSearches: 2,
        banAnswerInQueries: false,
        requireSearchTurns: false,
      },
      ragVerification: true,
      noiseBlocks: 4,
      replay: { enabled: true, resetEvery: 10, maxSuccessRate: 1 },
      answerTagLimit: 10,
      tagSpamFactor: 0.25,
      solverAdvantage: 'grpo_std',
    });
  });

  test('bad ssp fields are named', () => {
    const r = resolveRunConfig({
      recipe: 'ssp',
      ssp: { noiseBlocks: -1, solverAdvantage: 'rloo', replay: { resetEvery: 0 }, unknown: 1 },
    });
    expect(r.ok).toBe(false);
    const problems = r.ok ? '' : r.problems.join('\n');
    for (const field of ['ssp.noiseBlocks', 'ssp.solverAdvantage', 'ssp.replay.resetEvery', 'ssp'])
      expect(problems).toContain(field);
  });
});
