import type { EvalResult } from '../../contracts/eval-result';
import type { RecipeMetrics, ShardStageResult, UpdateResult } from '../../contracts/selfplay';
import {
  artifactKeys,
  iterationMetrics,
  iterationSummary,
  pipelineMetrics,
} from '../../workflows/iteration-summary';

const recipe: RecipeMetrics = {
  documents: 4,
  validTaskRate: 0.75,
  invalidReasons: { no_answer: 1 },
  passRateHistogram: [1, 2, 1],
  zeroAdvantageFraction: 0.25,
  meanRewardByRole: { challenger: 0.2, reasoner: 0.6 },
  rowsByRole: { challenger: 3, reasoner: 12 },
  extra: {},
};

const evalOf = (accuracy: Record<string, number>, version: number): EvalResult => ({
  policy: 'policy',
  version,
  benchmarks: Object.fromEntries(
    Object.entries(accuracy).map(([name, a]) => [
      name,
      {
        format: 'simple',
        items: 10,
        n: 1,
        accuracy: a,
        passAtK: {},
        majAtK: {},
        noAnswer: 0,
        reusedItems: 0,
        resultsKey: `runs/r/eval/${name}.jsonl.gz`,
      },
    ]),
  ),
});

const shard = (stage: ShardStageResult['stage'], n: number, reusedUnits = 0): ShardStageResult => ({
  stage,
  shard: n,
  key: `runs/r/iter-000001/${stage}/shard-${String(n).padStart(4, '0')}.jsonl.gz`,
  units: 2,
  reusedUnits,
  seconds: 1,
  metrics: {},
});

describe("an iteration's summary and metrics, without Temporal", () => {
  test('the summary: the mean reward over roles, the filter metrics, the seconds and each evaluation by benchmark', () => {
    const summary = iterationSummary(
      { metrics: recipe, rows: 15 },
      { evaluated: evalOf({ gsm8k: 0.5, math: 0.25 }, 1), startScore: evalOf({ gsm8k: 0.4 }, 0) },
      12.5,
    );
    expect(summary).toEqual({
      validTaskRate: 0.75,
      meanReward: 0.4,
      meanRewardByRole: { challenger: 0.2, reasoner: 0.6 },
      zeroAdvantageFraction: 0.25,
      rows: 15,
      seconds: 12.5,
      heldOutAccuracy: { gsm8k: 0.5, math: 0.25 },
      startAccuracy: { gsm8k: 0.4 },
    });
  });

  test('no role rewarded: mean reward 0, not NaN; no evaluation: no accuracy fields', () => {
    const summary = iterationSummary({ metrics: { ...recipe, meanRewardByRole: {} }, rows: 0 }, {}, 3);
    expect(summary.meanReward).toBe(0);
    expect(summary).not.toHaveProperty('heldOutAccuracy');
    expect(summary).not.toHaveProperty('startAccuracy');
    expect(summary).not.toHaveProperty('skippedContextLength');
  });

  test('units skipped for a prompt over the context are counted in the summary', () => {
    const metrics = { ...recipe, extra: { skippedContextLength: 2 } };
    expect(iterationSummary({ metrics, rows: 15 }, {}, 1).skippedContextLength).toBe(2);
  });

  test('the metrics: train metrics of applied updates only, reused units summed, rounds only when gathered', () => {
    const update = (policy: string, applied: boolean): UpdateResult => ({
      policy,
      committed: { version: applied ? 2 : 1 },
      applied,
      train: { loss: applied ? 0.5 : 0 },
      seconds: 1,
    });
    const pipeline = pipelineMetrics(0, { policy: { version: 1 } }, { policy: { version: 1 } }, 0);
    const base = {
      filtered: { metrics: recipe },
      updates: [update('challenger', true), update('reasoner', false)],
      stages: { filter: { wallSeconds: 1, busySeconds: 1 } },
      stageResults: [shard('propose', 0, 2), shard('judge', 0, 1)],
      evaluations: {},
      pipeline,
    };
    const metrics = iterationMetrics({ ...base, rounds: undefined });
    expect(metrics.train).toEqual({ challenger: { loss: 0.5 } });
    expect(metrics.reusedUnits).toBe(3);
    expect(metrics).not.toHaveProperty('rounds');
    expect(metrics.pipeline).toBe(pipeline);
    expect(iterationMetrics({ ...base, rounds: 2 }).rounds).toBe(2);
  });

  test('staleness is the largest version gap between the base and what sampled', () => {
    const behaviour = { c: { version: 3 }, r: { version: 2 } };
    const baseSet = { c: { version: 4 }, r: { version: 2 } };
    expect(pipelineMetrics(1, behaviour, baseSet, 4.5)).toEqual({
      maxStaleness: 1,
      behaviourVersions: { c: 3, r: 2 },
      baseVersions: { c: 4, r: 2 },
      staleness: 1,
      waitSeconds: 4.5,
    });
  });

  test('artifacts: the batches and each stage’s shard outputs, sorted', () => {
    const keys = artifactKeys([shard('judge', 1), shard('judge', 0), shard('gate', 0)], ['b2', 'b1']);
    expect(keys).toEqual({
      batch: ['b1', 'b2'],
      judge: [shard('judge', 0).key, shard('judge', 1).key],
      gate: [shard('gate', 0).key],
    });
  });
});
