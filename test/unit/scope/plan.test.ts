import { loadCorpus } from '../../../activities/corpus/corpus';
import { seededRng } from '../../../activities/lib/rng';
import { planScope, stratifiedBudgets } from '../../../activities/recipes/scope/plan';
import { selectTask } from '../../../activities/recipes/scope/select';
import { configFor } from '../../support/recipe-harness';
import { inMemorySegments } from '../../../activities/corpus/segment-source';

const count = (xs: readonly number[], v: number): number => xs.filter((x) => x === v).length;

describe('SCOPE plan and task selection', () => {
  test('budgets 1/2/3 are stratified 4:3:2, shuffled by the seed', () => {
    const nine = stratifiedBudgets(9, [4, 3, 2], seededRng('a'));
    expect([1, 2, 3].map((b) => count(nine, b))).toEqual([4, 3, 2]);
    const many = stratifiedBudgets(64, [4, 3, 2], seededRng('b'));
    // 64·4/9 = 28.4, 64·3/9 = 21.3, 64·2/9 = 14.2: floors 28/21/14, the one left over goes to budget 1.
    expect([1, 2, 3].map((b) => count(many, b))).toEqual([29, 21, 14]);
    expect(stratifiedBudgets(64, [4, 3, 2], seededRng('b'))).toEqual(many);
    expect(stratifiedBudgets(64, [4, 3, 2], seededRng('c'))).not.toEqual(many);
    expect(stratifiedBudgets(5, [0, 1, 0], seededRng('d'))).toEqual([2, 2, 2, 2, 2]);
  });

  test('a run without a frozen judge endpoint is refused before anything is sampled', async () => {
    const config = configFor({ recipe: 'scope' });
    const corpus = () => Promise.reject(new Error('not reached'));
    await expect(
      planScope({ config, runId: 'unit', iteration: 1, corpus, segments: corpus, state: undefined }),
    ).rejects.toThrow(/inference.roles.judge .*"frozen": true/);
  });

  test('a staged run whose own candidate rounds make too many shards is refused at its first plan', async () => {
    const config = configFor({
      recipe: 'scope',
      shardSize: 2,
      scope: { schedule: { candidatesPerRound: 256 } },
      inference: { roles: { judge: { baseUrl: 'http://judge.local/v1', model: 'base', frozen: true } } },
    });
    const corpus = () => Promise.reject(new Error('not reached'));
    await expect(
      planScope({ config, runId: 'unit', iteration: 1, corpus, segments: corpus, state: undefined }),
    ).rejects.toThrow(
      'scope.schedule.candidatesPerRound: 256 candidates in shards of 2 make more than 64 shards per round',
    );
  });

  test('a Solver step plans a round of candidatesPerRound fresh documents', async () => {
    const config = configFor({
      recipe: 'scope',
      batchSize: 2,
      scope: { schedule: { stageSteps: 1, candidatesPerRound: 3, maxRounds: 2 } },
      inference: { roles: { judge: { baseUrl: 'http://judge.local/v1', model: 'base', frozen: true } } },
    });
    const corpus = await loadCorpus(config.corpus.uri);
    const plan = (iteration: number, round: number) =>
      planScope({
        config,
        runId: 'unit',
        iteration,
        corpus: () => Promise.resolve(corpus),
        segments: () => Promise.resolve(inMemorySegments(corpus)),
        state: undefined,
        round,
      });
    const [challenger, first, second] = await Promise.all([plan(1, 0), plan(2, 0), plan(2, 1)]);
    expect([challenger.length, first.length, second.length]).toEqual([2, 3, 3]);
    const ids = [...challenger, ...first, ...second].map((u) => u.segmentId);
    expect(new Set(ids).size).toBe(Math.min(8, corpus.stats.segments));
  });

  test('one prompt per document; consecutive iterations use different documents; seeded', async () => {
    const config = configFor({
      recipe: 'scope',
      batchSize: 6,
      scope: { taskTypes: ['planning', 'writing'] },
      inference: { roles: { judge: { baseUrl: 'http://judge.local/v1', model: 'base', frozen: true } } },
    });
    const corpus = await loadCorpus(config.corpus.uri);
    const plan = (iteration: number) =>
      planScope({
        config,
        runId: 'unit',
        iteration,
        corpus: () => Promise.resolve(corpus),
        segments: () => Promise.resolve(inMemorySegments(corpus)),
        state: undefined,
      });
    const [one, two] = [await plan(1), await plan(2)];
    expect(one).toHaveLength(6);
    expect(new Set(one.map((u) => u.segmentId)).size).toBe(6);
    const overlap = one.filter((u) => two.some((v) => v.segmentId === u.segmentId));
    expect(overlap.length).toBe(Math.max(0, 12 - corpus.segments.length));
    for (const u of one) {
      expect(['planning', 'writing']).toContain(u.taskType);
      expect([1, 2, 3]).toContain(u.searchBudget);
      expect(u.text).toBe(corpus.segments.find((s) => s.id === u.segmentId)?.text);
    }
    expect(await plan(1)).toEqual(one);
  });

  test('task selection: inside [0.2, 0.8], the one nearest 0.5, ties to the lower index, none otherwise', () => {
    const band = { min: 0.2, max: 0.8 };
    expect(selectTask([0.1, 0.3, 0.6, 0.9], band)).toBe(2);
    expect(selectTask([0.4, 0.6], band)).toBe(0);
    expect(selectTask([undefined, 0.8, 0.2], band)).toBe(1);
    expect(selectTask([0.1 + 0.7 - 1e-12], band)).toBe(0);
    expect(selectTask([0, 1, undefined, 0.19], band)).toBeUndefined();
    expect(selectTask([], band)).toBeUndefined();
  });
});
