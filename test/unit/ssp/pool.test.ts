import { drawReplacement, EMPTY_STATE, nextState, readState } from '../../../activities/recipes/ssp/pool';
import type { PoolProblem, SspState } from '../../../activities/recipes/ssp/records';
import { seededRng } from '../../../activities/lib/rng';
import { SSP_DEFAULTS } from '../../../config/presets/ssp';

const REPLAY = SSP_DEFAULTS.replay;
const problem = (q: string, successRate = 0.4, iteration = 1): PoolProblem => ({
  question: q,
  answer: `a-${q}`,
  successRate,
  iteration,
});

describe('SSP replay pool (ssp.md §1.6)', () => {
  test('verified problems enter; the pool is emptied after every 10th iteration', () => {
    let state: SspState = EMPTY_STATE;
    const sizes: number[] = [];
    for (let k = 1; k <= 21; k++) {
      state = nextState(state, k, [problem(`q${k}`, 0.2, k)], REPLAY);
      sizes.push(state.pool.length);
    }
    // After k = 1..9: 1..9 problems; after 10: empty; after 11..19: 1..9; after 20: empty; after 21: 1.
    expect(sizes).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]);
  });

  test('a problem already in the pool is not added again (the code re-added reused items, §7)', () => {
    const start = nextState(EMPTY_STATE, 1, [problem('Who founded Velmora?')], REPLAY);
    const again = nextState(start, 2, [problem('who founded velmora'), problem('new one')], REPLAY);
    expect(again.pool.map((p) => p.question)).toEqual(['Who founded Velmora?', 'new one']);
  });

  test('maxSuccessRate keeps problems at most that easy; 1.0 (the code) keeps all', () => {
    const added = [problem('easy', 1), problem('hard', 0)];
    expect(nextState(EMPTY_STATE, 1, added, REPLAY).pool).toHaveLength(2);
    expect(nextState(EMPTY_STATE, 1, added, { ...REPLAY, maxSuccessRate: 0.8 }).pool).toEqual([added[1]]);
  });

  test('replay off: the pool stays empty and nothing is drawn (dummy padding)', () => {
    const off = { ...REPLAY, enabled: false };
    expect(nextState(EMPTY_STATE, 1, [problem('q')], off)).toEqual(EMPTY_STATE);
    const full = nextState(EMPTY_STATE, 1, [problem('q')], REPLAY);
    expect(drawReplacement(full, off, seededRng(1))).toBeUndefined();
  });

  test('draws are uniform over the pool, seeded, and nothing comes from an empty pool', () => {
    const state = nextState(
      EMPTY_STATE,
      1,
      ['a', 'b', 'c'].map((q) => problem(q)),
      REPLAY,
    );
    expect(drawReplacement(EMPTY_STATE, REPLAY, seededRng(1))).toBeUndefined();
    expect(drawReplacement(state, REPLAY, seededRng(7, 'x'))).toEqual(
      drawReplacement(state, REPLAY, seededRng(7, 'x')),
    );
    const counts = new Map<string, number>();
    for (let i = 0; i < 3000; i++) {
      const q = drawReplacement(state, REPLAY, seededRng('draw', i))?.question ?? '';
      counts.set(q, (counts.get(q) ?? 0) + 1);
    }
    for (const q of ['a', 'b', 'c']) expect(counts.get(q)).toBeGreaterThan(900);
  });

  test('a state of another recipe is refused by name', () => {
    expect(() => readState({ v: 1, history: {} })).toThrow(/not SSP's replay pool/);
    expect(readState(undefined)).toEqual(EMPTY_STATE);
  });
});
