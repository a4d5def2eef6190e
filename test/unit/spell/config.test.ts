import { resolveRunConfig } from '../../../config/schema';
import { configFor } from '../../support/recipe-harness';

describe('SPELL run config', () => {
  test('the preset: G=8, temperature 0.7, top-p 0.95, token-mean loss, β=0, lr 2e-6 constant, LLM judging', () => {
    const c = configFor({ recipe: 'spell' });
    expect(c).toMatchObject({
      groupSize: 8,
      batchSize: 480,
      judgePool: 'rollout',
      sampling: { temperature: 0.7, topP: 0.95 },
      training: {
        estimator: 'grpo',
        loss: { normalization: 'token_mean', klCoef: 0, entropyCoef: 0 },
        optimizer: {
          learningRate: 2e-6,
          schedule: 'constant',
          warmupSteps: 0,
          maxGradNorm: 1,
          weightDecay: 0.01,
        },
      },
    });
    expect(c.spell).toMatchObject({
      historySize: 3,
      newDocuments: 5,
      responderGroups: 128,
      maxRounds: 10,
      verifierRatio: 0.125,
      verifierAgreement: { min: 0.51, max: 0.99 },
      questionerReward: 'gaussian',
      badFormatPenalty: -1,
      ungroundedPenalty: -0.5,
      maxAnswerTokens: 40,
      maxPromptTokens: 18000,
      taskWeights: { general_qa: 1, multiple_choice: 1, financial_math: 1 },
    });
    expect(c.spell.sigma).toBeCloseTo(1 / 6, 12);
  });

  test('bad spell fields are named', () => {
    const r = resolveRunConfig({
      recipe: 'spell',
      spell: {
        verifierAgreement: { min: 0.9, max: 0.5 },
        questionerReward: 'linear',
        historyRule: 'both',
        maxRounds: 0,
      },
    });
    expect(r.ok).toBe(false);
    const problems = r.ok ? [] : r.problems.join('\n');
    expect(problems).toContain('spell.verifierAgreement');
    expect(problems).toContain('spell.questionerReward');
    expect(problems).toContain('spell.historyRule');
    expect(problems).toContain('spell.maxRounds');
  });
});
