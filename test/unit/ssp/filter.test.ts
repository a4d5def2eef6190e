import { filterSsp } from '../../../activities/recipes/ssp/filter';
import { EMPTY_STATE } from '../../../activities/recipes/ssp/pool';
import type { SspState } from '../../../activities/recipes/ssp/records';
import { zScores } from '../../../activities/scoring/advantages';
import { configFor } from '../../support/recipe-harness';
import { item, type ItemSpec } from './records';

const G = 5;

function run(specs: ItemSpec[], options: { iteration?: number; state?: SspState; ssp?: object } = {}) {
  const items = specs.map(item);
  const config = configFor({ recipe: 'ssp', groupSize: G, ...(options.ssp ? { ssp: options.ssp } : {}) });
  return filterSsp({ config, runId: 'unit', iteration: options.iteration ?? 1, state: options.state }, [
    {
      shard: 0,
      plan: items.map((x) => x.plan),
      propose: items.map((x) => x.propose),
      gate: items.map((x) => x.gate),
      solve: items.map((x) => x.solve),
      judge: items.map((x) => x.judge),
    },
  ]);
}

describe('SSP filter (ssp.md §1.8–1.10)', () => {
  const specs: ItemSpec[] = [
    { i: 0, verified: true, rewards: [1, 0, 0, 0, 0], source: 'own' },
    { i: 1, verified: true, rewards: [0, 0, 0, 0, 0], source: 'own' },
    { i: 2, verified: true, rewards: [1, 1, 1, 1, 0.25], source: 'own' },
    { i: 3, verified: false, rewards: [1, 1, 0, 0, 0], source: 'replay' },
    { i: 4, rewards: [], source: 'none' },
  ];

  test('proposer rows: R = 1 − success rate for valid, 0 for invalid (replay-filled or not), advantage = R', () => {
    const { rows } = run(specs);
    const proposer = rows.filter((r) => r.role === 'proposer');
    expect(proposer.map((r) => r.reward)).toEqual([0.8, 1, 0, 0, 0]);
    for (const r of proposer) expect(r.advantage).toBe(r.reward);
    expect(proposer.map((r) => r.group)).toEqual([0, 1, 2, 3, 4].map((i) => `proposer/a-${i}`));
    // Proposer rows first: the code updates the proposer before the solver.
    expect(rows.slice(0, 5).every((r) => r.role === 'proposer')).toBe(true);
  });

  test('solver groups for own and replay problems, GRPO with the unbiased std; nothing for an empty slot', () => {
    const { rows } = run(specs);
    const groups = new Map<string, number[]>();
    for (const r of rows.filter((x) => x.role === 'solver'))
      groups.set(r.group, [...(groups.get(r.group) ?? []), r.reward]);
    expect([...groups.keys()]).toEqual(['solver/q-0', 'solver/q-1', 'solver/q-2', 'solver/q-3']);
    for (const [name, rewards] of groups) {
      const expected = zScores(rewards, 1);
      rows
        .filter((r) => r.group === name)
        .forEach((r, j) => expect(r.advantage).toBeCloseTo(expected[j] as number, 12));
    }
  });

  test('every row carries its trajectory loss mask, covering exactly the information blocks', () => {
    const { rows } = run(specs);
    for (const r of rows) {
      expect(r.lossMaskSpans?.length).toBeGreaterThan(0);
      const points = [...r.completion];
      for (const [s, e] of r.lossMaskSpans ?? [])
        expect(points.slice(s, e).join('').trim()).toMatch(/^<information>[\s\S]*<\/information>$/);
    }
  });

  test('the next pool holds this iteration own verified problems with their success rates', () => {
    const { state } = run(specs, { iteration: 3 });
    expect(state?.pool.map((p) => [p.answer, p.successRate, p.iteration])).toEqual([
      ['Answer0', 0.2, 3],
      ['Answer1', 0, 3],
      ['Answer2', 1, 3],
    ]);
    expect(run(specs, { iteration: 10 }).state).toEqual(EMPTY_STATE);
  });

  test('metrics: valid rate, reasons per filter stage, histogram of own groups, replay and empty slots', () => {
    const { metrics } = run(specs);
    expect(metrics.validTaskRate).toBeCloseTo(3 / 5, 12);
    expect(metrics.invalidReasons).toEqual({ 'rag:wrong_answer': 1, 'rule:no_question': 1 });
    expect(metrics.passRateHistogram).toEqual([1, 1, 0, 0, 0, 1]);
    expect(metrics.extra).toMatchObject({
      ruleValid: 4,
      ragVerified: 3,
      replayFilled: 1,
      emptySlots: 1,
      poolSize: 3,
    });
    expect(metrics.rowsByRole).toEqual({ proposer: 5, solver: 20 });
  });

  test('a solver group of the wrong size is an error, not a silently skewed advantage', () => {
    expect(() => run([{ i: 0, verified: true, rewards: [1, 0], source: 'own' }])).toThrow(
      /2 judged answers, expected 5/,
    );
  });
});
