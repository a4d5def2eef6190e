import type { RunConfig } from '../../../config/schema';
import { buildClusters } from '../../../activities/recipes/spell/clusters';
import { planSpell } from '../../../activities/recipes/spell/plan';
import { historyKey } from '../../../activities/recipes/spell/memory';
import type { SpellState } from '../../../activities/recipes/spell/records';
import { loadCorpus, type Corpus, type CorpusSegment } from '../../../activities/corpus/corpus';
import { configFor } from '../../support/recipe-harness';

const config = (overrides: Record<string, unknown> = {}): RunConfig =>
  configFor({ recipe: 'spell', corpus: { uri: 'test/fixtures/corpus/clusters.jsonl' }, ...overrides });
const segment = (docId: string, metadata: Record<string, unknown>): CorpusSegment => ({
  id: `${docId}#0`,
  docId,
  index: 0,
  text: `text of ${docId}`,
  metadata,
});
const options = { clusterField: 'cluster', taskField: 'task', hashClusterSize: 20 };

describe('clusters (§5)', () => {
  test('from the cluster field, with the tasks the documents name', () => {
    const clusters = buildClusters(
      [
        segment('a1', { cluster: 'web-7' }),
        segment('m1', { cluster: 12, task: 'financial_math' }),
        segment('a2', { cluster: 'web-7', task: 'not-a-task' }),
        segment('m2', { cluster: 12 }),
      ],
      options,
    );
    expect(clusters).toEqual([
      {
        id: '12',
        documents: [
          { id: 'm1#0', text: 'text of m1' },
          { id: 'm2#0', text: 'text of m2' },
        ],
        tasks: ['financial_math'],
      },
      {
        id: 'web-7',
        documents: [
          { id: 'a1#0', text: 'text of a1' },
          { id: 'a2#0', text: 'text of a2' },
        ],
        tasks: ['general_qa', 'multiple_choice', 'financial_math'],
      },
    ]);
  });

  test('documents without the field are grouped by a hash of their id, about hashClusterSize each', () => {
    const segments = Array.from({ length: 200 }, (_, i) => segment(`doc-${i}`, {}));
    const clusters = buildClusters(segments, options);
    expect(clusters).toHaveLength(10);
    expect(clusters.every((c) => c.id.startsWith('hash:'))).toBe(true);
    expect(clusters.reduce((s, c) => s + c.documents.length, 0)).toBe(200);
    // Deterministic, and independent of corpus order.
    expect(buildClusters([...segments].reverse(), options).map((c) => c.documents.length)).toEqual(
      clusters.map((c) => c.documents.length),
    );
  });
});

describe('plan (§1.1–1.2)', () => {
  let corpus: Corpus;
  beforeAll(async () => {
    corpus = await loadCorpus('test/fixtures/corpus/clusters.jsonl');
  });
  const plan = (cfg: RunConfig, state?: SpellState, iteration = 1, round?: number) =>
    planSpell({
      config: cfg,
      runId: 'unit',
      iteration,
      corpus: () => Promise.resolve(corpus),
      segments: () => Promise.reject(new Error('SPELL clusters the whole corpus')),
      state,
      ...(round === undefined ? {} : { round }),
    });

  test('draws B (cluster, task) items, tasks about 1:1:1, from the committed-empty history', async () => {
    const units = await plan(config({ batchSize: 300 }));
    expect(units).toHaveLength(300);
    for (const task of ['general_qa', 'multiple_choice', 'financial_math'])
      expect(units.filter((u) => u.task === task).length).toBeGreaterThan(70);
    for (const u of units) {
      expect(u.documents).toHaveLength(14);
      expect(u.questionerDocs).toHaveLength(5);
      expect(u.examples).toEqual([]);
      expect(u.targetLetter === undefined).toBe(u.task !== 'multiple_choice');
    }
    expect(new Set(units.filter((u) => u.task === 'multiple_choice').map((u) => u.targetLetter)).size).toBe(
      4,
    );
  });

  test('clusters do not repeat within a task while there are enough', async () => {
    const units = await plan(
      config({
        batchSize: 6,
        spell: { taskWeights: { general_qa: 1, multiple_choice: 0, financial_math: 0 } },
      }),
    );
    const firstThree = units.slice(0, 3).map((u) => u.cluster);
    expect(new Set(firstThree).size).toBe(3);
    expect(units.every((u) => u.task === 'general_qa')).toBe(true);
  });

  test('uses the committed history: its examples and its documents plus m new ones', async () => {
    const cfg = config({ batchSize: 30 });
    const docs = ['freight-01#0', 'freight-04#0', 'freight-05#0', 'freight-09#0', 'freight-13#0'];
    const state: SpellState = {
      v: 1,
      history: {
        [historyKey('financial_math', 'freight')]: [{ docs, question: 'What is X?', answer: '12' }],
      },
    };
    const units = await plan(cfg, state);
    const withHistory = units.filter((u) => u.task === 'financial_math' && u.cluster === 'freight');
    expect(withHistory.length).toBeGreaterThan(0);
    for (const u of withHistory) {
      expect(u.examples).toEqual([{ question: 'What is X?', answer: '12' }]);
      expect(u.questionerDocs).toHaveLength(10);
      for (const id of docs) expect(u.questionerDocs).toContain(id);
    }
    for (const u of units.filter((x) => !withHistory.includes(x))) expect(u.examples).toEqual([]);
    // The "w/o history" ablation ignores it.
    const ablated = await plan(config({ batchSize: 30, spell: { historySize: 0 } }), state);
    expect(ablated.every((u) => u.examples.length === 0 && u.questionerDocs.length === 5)).toBe(true);
  });

  test('is seeded by (seed, iteration): a retry plans the same, another iteration differs', async () => {
    const cfg = config({ batchSize: 12 });
    expect(await plan(cfg)).toEqual(await plan(cfg));
    expect(await plan(cfg, undefined, 2)).not.toEqual(await plan(cfg));
  });

  test("the accumulator's round r plans items rB..(r+1)B−1 of the step's one stream", async () => {
    const round = (r: number, cfg: RunConfig) => plan(cfg, undefined, 1, r);
    const cfg = config({ batchSize: 4 });
    const whole = await plan(config({ batchSize: 12 }));
    expect(await round(0, cfg)).toEqual(whole.slice(0, 4));
    expect(await round(1, cfg)).toEqual(whole.slice(4, 8));
    expect(await round(2, cfg)).toEqual(whole.slice(8, 12));
  });

  test('no cluster repeats across the rounds of a step while there are enough', async () => {
    const many: Corpus = {
      ...corpus,
      segments: Array.from({ length: 60 }, (_, i) => segment(`d${i}`, { cluster: `c${i % 30}` })),
    };
    const cfg = config({ batchSize: 9 });
    const rounds = await Promise.all(
      [0, 1, 2].map((r) =>
        planSpell({
          config: cfg,
          runId: 'unit',
          iteration: 1,
          corpus: () => Promise.resolve(many),
          segments: () => Promise.reject(new Error('unused')),
          state: undefined,
          round: r,
        }),
      ),
    );
    for (const task of ['general_qa', 'multiple_choice', 'financial_math']) {
      const clusters = rounds
        .flat()
        .filter((u) => u.task === task)
        .map((u) => u.cluster);
      expect(new Set(clusters).size).toBe(clusters.length);
    }
  });

  test('refuses an estimator the paper does not use, and tasks without clusters', async () => {
    await expect(plan(config({ training: { estimator: 'dr_grpo' } }))).rejects.toThrow(/training.estimator/);
    const unclustered = await loadCorpus('test/fixtures/corpus/small.jsonl');
    await expect(
      planSpell({
        config: config({ spell: { taskWeights: { general_qa: 0, multiple_choice: 0, financial_math: 0 } } }),
        runId: 'unit',
        iteration: 1,
        corpus: () => Promise.resolve(unclustered),
        segments: () => Promise.reject(new Error('unused')),
        state: undefined,
      }),
    ).rejects.toThrow(/taskWeights/);
  });
});
