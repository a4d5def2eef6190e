import {
  ladderWindows,
  masteredRungShifts,
  offeredShare,
  passRateBand,
  rungPassRate,
  rungShift,
} from '../../infra/toy-world/ladder';
import type { SpicePoint } from '../../infra/toy-world/learning';
import { depotLog, PARTNER_RUNG, RUNGS } from '../../infra/toy-world/world';

/**
 * The Challenger's ladder as the bench and the learning test read it (infra/toy-world/ladder.ts): a rung's share
 * among the tasks of the documents that offer it, pooled over iterations, and the rungs the Reasoner mastered.
 */
type Point = Pick<SpicePoint, 'rungTasks' | 'reasonerAnswers'> & { iteration: number };

const point = (
  iteration: number,
  rungTasks: Point['rungTasks'],
  reasonerAnswers: Point['reasonerAnswers'] = {},
): Point => ({ iteration, rungTasks, reasonerAnswers });

describe("the Challenger's ladder", () => {
  test('every document offers a rung and its partner, and no other', () => {
    for (let i = 0; i < 200; i++) {
      const [a, b] = depotLog(0, i).tasks.map((t) => t.rung);
      expect(PARTNER_RUNG[a!]).toBe(b);
      expect(PARTNER_RUNG[b!]).toBe(a);
    }
    for (const rung of RUNGS) expect(PARTNER_RUNG[PARTNER_RUNG[rung]]).toBe(rung);
  });

  test("a rung's share counts the tasks of the documents offering it, pooled over the window", () => {
    const points = [
      point(1, { add: 2, sub: 6, add_carry: 10 }),
      point(2, { add: 6, sub: 2, sub_borrow: 30 }),
      point(3, { add: 1, sub: 9 }),
    ];
    // Of all valid tasks add is 8 of 56; of the tasks about no-carry documents, 8 of 16.
    expect(offeredShare(points, 'add', { from: 1, to: 2 })).toBeCloseTo(0.5, 12);
    expect(offeredShare(points, 'add', { from: 3, to: 3 })).toBeCloseTo(0.1, 12);
    expect(offeredShare(points, 'add_carry', { from: 1, to: 2 })).toBeCloseTo(0.25, 12);
    expect(offeredShare(points, 'add_carry', { from: 3, to: 3 })).toBeUndefined();
  });

  test("the Reasoner's pass rate on a rung is pooled over its answers, not averaged over iterations", () => {
    const points = [
      point(1, {}, { add: { right: 1, total: 2 } }),
      point(2, {}, { add: { right: 18, total: 18 } }),
    ];
    expect(rungPassRate(points, 'add', { from: 1, to: 2 })).toBeCloseTo(0.95, 12);
    expect(rungPassRate(points, 'sub', { from: 1, to: 2 })).toBeUndefined();
  });

  test('only the rungs mastered in the mastery window are reported, with their shares early and late', () => {
    const points = [
      point(
        1,
        { add: 4, sub: 4, add_carry: 4, sub_borrow: 4 },
        { add: { right: 19, total: 20 }, sub: { right: 12, total: 20 } },
      ),
      point(2, { add: 6, sub: 2 }, { add: { right: 9, total: 10 }, add_carry: { right: 9, total: 10 } }),
      point(3, { add: 1, sub: 9, add_carry: 4, sub_borrow: 4 }),
      point(4, { add: 0, sub: 10, add_carry: 8 }),
    ];
    const shifts = masteredRungShifts(points, {
      mastery: { from: 1, to: 2 },
      early: { from: 1, to: 2 },
      late: { from: 3, to: 4 },
    });
    // add: 28 of 30 right; sub 60 % and add_carry exactly 90 % are not mastered; sub_borrow was never answered.
    expect(shifts).toEqual([{ rung: 'add', passRate: 28 / 30, early: 10 / 16, late: 1 / 20 }]);
  });

  test("a rung's shift is undefined without answers over the mastery window or tasks in a window", () => {
    const windows = { mastery: { from: 1, to: 1 }, early: { from: 1, to: 1 }, late: { from: 2, to: 2 } };
    const answered = { add: { right: 9, total: 10 } };
    expect(rungShift([point(1, { add: 3, sub: 1 }, answered), point(2, { sub: 4 })], 'add', windows)).toEqual(
      {
        rung: 'add',
        passRate: 0.9,
        early: 0.75,
        late: 0,
      },
    );
    expect(rungShift([point(1, { add: 3 }), point(2, { sub: 4 })], 'add', windows)).toBeUndefined();
    expect(
      rungShift([point(1, { add: 3 }, answered), point(2, { add_carry: 4 })], 'add', windows),
    ).toBeUndefined();
  });

  test('a run is read with mastery and early over its first five iterations, late its second half', () => {
    expect(ladderWindows(30)).toEqual({
      mastery: { from: 1, to: 5 },
      early: { from: 1, to: 5 },
      late: { from: 16, to: 30 },
    });
    expect(ladderWindows(3).early).toEqual({ from: 1, to: 3 });
  });
});

describe("the Reasoner's pass rate on the Challenger's tasks", () => {
  const rates = (...xs: number[]) => xs.map((meanPassRate) => ({ meanPassRate }));

  test('is held to its band as a mean over five consecutive iterations', () => {
    // One iteration at 0.9 among others at 0.5: the band's top is 0.58, not 0.9.
    expect(passRateBand(rates(0.5, 0.5, 0.9, 0.5, 0.5, 0.5))).toEqual({
      min: expect.closeTo(0.58, 12) as number,
      max: expect.closeTo(0.58, 12) as number,
    });
    const rising = passRateBand(rates(0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7));
    expect(rising?.min).toBeCloseTo(0.5, 12);
    expect(rising?.max).toBeCloseTo(0.6, 12);
  });

  test('has no band over a run shorter than its window', () => {
    expect(passRateBand(rates(0.5, 0.5, 0.5, 0.5))).toBeUndefined();
    expect(passRateBand(rates(0.5, 0.5), 2)).toEqual({ min: 0.5, max: 0.5 });
  });
});
