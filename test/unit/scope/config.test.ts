import { resolveRunConfig } from '../../../config/schema';
import { configFor } from '../../support/recipe-harness';

describe('SCOPE run config', () => {
  test('the preset: Table 9 and the spec constants', () => {
    const c = configFor({ recipe: 'scope' });
    expect(c).toMatchObject({
      batchSize: 64,
      groupSize: 8,
      judgePool: 'rollout',
      sampling: { maxTokens: 8192 },
      training: {
        estimator: 'grpo',
        loss: { type: 'ppo_clip', clipLow: 0.2, clipHigh: 0.2, klCoef: 1e-3 },
        optimizer: { learningRate: 1e-6, maxGradNorm: 1 },
      },
      iterations: 120,
      retrieval: { topK: 3, passageTokens: 500, responseTokens: 500 },
    });
    expect(c.scope).toEqual({
      taskTypes: ['long_form_qa', 'summarisation', 'planning', 'writing'],
      searchTurnWeights: [4, 3, 2],
      searchSyntax: 'search_tags',
      solverMaxSearches: 4,
      gateFailReward: 'eq4',
      taskSelection: { min: 0.2, max: 0.8 },
      lengthPenalty: { softTokens: 1024, hardTokens: 2048, floor: 0.05 },
      rubrics: { min: 3, max: 5 },
      rubricContext: 'source',
      schedule: {
        mode: 'stages',
        stageSteps: 20,
        solverTasks: 256,
        filterRollouts: 4,
        candidatesPerRound: 256,
        maxRounds: 4,
      },
      judgeSampling: {
        gate: { temperature: 0, maxTokens: 4096 },
        rubrics: { temperature: 0, maxTokens: 8192 },
        grade: { temperature: 0.6, maxTokens: 16384 },
      },
    });
  });

  test("small shards lower the preset's candidates per round to what 64 shards hold; a run's own value stays", () => {
    const perRound = (input: object) =>
      configFor({ recipe: 'scope', ...input }).scope.schedule.candidatesPerRound;
    // The paper's 256 fit in 64 shards of 4 or more.
    expect(perRound({ shardSize: 8 })).toBe(256);
    expect(perRound({ shardSize: 4 })).toBe(256);
    expect(perRound({ shardSize: 2 })).toBe(128);
    expect(perRound({ shardSize: 1 })).toBe(64);
    // The run's own choice is kept, within the shard limit or beyond it (refused at the first plan).
    expect(perRound({ shardSize: 2, scope: { schedule: { candidatesPerRound: 16 } } })).toBe(16);
    expect(perRound({ shardSize: 2, scope: { schedule: { candidatesPerRound: 256 } } })).toBe(256);
    // A bad shard size is the schema's to refuse, not hidden by the derived value.
    const bad = resolveRunConfig({ recipe: 'scope', shardSize: 0 });
    expect(!bad.ok && bad.problems).toContain('shardSize: Too small: expected number to be >0');
    // Deriving left the defaults as they were.
    expect(perRound({})).toBe(256);
  });

  test('bad scope fields are named', () => {
    const r = resolveRunConfig({
      recipe: 'scope',
      scope: {
        taskTypes: [],
        gateFailReward: 'both',
        taskSelection: { min: 0.8, max: 0.2 },
        lengthPenalty: { softTokens: 2048, hardTokens: 1024, floor: 0.05 },
        searchTurnWeights: [0, 0, 0],
      },
    });
    expect(r.ok).toBe(false);
    const problems = r.ok ? '' : r.problems.join('\n');
    for (const field of [
      'taskTypes',
      'gateFailReward',
      'taskSelection',
      'lengthPenalty',
      'searchTurnWeights',
    ])
      expect(problems).toContain(`scope.${field}`);
  });
});
