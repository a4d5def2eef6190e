/**
 * The Challenger's ladder over a run of SPICE's toy world, read from the curve's points: which rungs the
 * Reasoner has mastered, and whether the Challenger leaves them, as SPICE's Challenger (rewarded most for tasks
 * the Reasoner solves half the time) should.
 *
 * A rung's share is counted among the valid tasks of the documents that offer it (the rung and its partner,
 * `PARTNER_RUNG`), not among all valid tasks: which documents an iteration draws is the corpus's chance, not
 * the Challenger's choice, and with 16 documents an iteration a third of which offer the no-carry rungs, the
 * draw alone moved the easiest rung's share of all tasks by about 5 points between runs of the same model
 * (12.7 to 32.3 % over the first two iterations of six runs), more than half the margin the ladder is held to.
 * Counts are pooled over a window of iterations, so an iteration with few tasks of a rung weighs little.
 *
 * The frontier: SPICE's Challenger is rewarded most for tasks the Reasoner solves half the time, so the
 * Reasoner's mean pass rate on its valid tasks should stay near one half as the Reasoner improves
 * (`passRateBand`).
 */
import type { SpicePoint, Tally } from './learning';
import { PARTNER_RUNG, RUNGS, type Rung } from './world';

/** A rung is mastered when the Reasoner answers it right this often. */
export const MASTERED_PASS_RATE = 0.9;

/** Iterations `from` to `to`, both included. */
export interface IterationWindow {
  from: number;
  to: number;
}

type LadderPoint = Pick<SpicePoint, 'rungTasks' | 'reasonerAnswers'> & { iteration: number };

/** How many iterations the pass rate is averaged over before it is held to its band. */
export const BAND_WINDOW = 5;

const within = <P extends { iteration: number }>(points: readonly P[], w: IterationWindow): P[] =>
  points.filter((p) => p.iteration >= w.from && p.iteration <= w.to);

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);

/**
 * `rung`'s share of the valid tasks about documents that offer it, pooled over the window; undefined when the
 * window holds no such task.
 */
export function offeredShare(
  points: readonly LadderPoint[],
  rung: Rung,
  window: IterationWindow,
): number | undefined {
  const inWindow = within(points, window);
  const mine = sum(inWindow.map((p) => p.rungTasks[rung] ?? 0));
  const offered = mine + sum(inWindow.map((p) => p.rungTasks[PARTNER_RUNG[rung]] ?? 0));
  return offered ? mine / offered : undefined;
}

/** The Reasoner's pass rate on `rung`, pooled over the window; undefined when it answered none. */
export function rungPassRate(
  points: readonly LadderPoint[],
  rung: Rung,
  window: IterationWindow,
): number | undefined {
  const tallies = within(points, window).flatMap((p): Tally[] => {
    const t = p.reasonerAnswers[rung];
    return t ? [t] : [];
  });
  const total = sum(tallies.map((t) => t.total));
  return total ? sum(tallies.map((t) => t.right)) / total : undefined;
}

/** A rung's pass rate over the mastery window, and its share of its documents' tasks early and late in the run. */
export interface RungShift {
  rung: Rung;
  passRate: number;
  early: number;
  late: number;
}

export interface LadderWindows {
  mastery: IterationWindow;
  early: IterationWindow;
  late: IterationWindow;
}

/** `rung`'s shift over the windows; undefined when it has no answers or no tasks in one of them. */
export function rungShift(
  points: readonly LadderPoint[],
  rung: Rung,
  windows: LadderWindows,
): RungShift | undefined {
  const passRate = rungPassRate(points, rung, windows.mastery);
  const early = offeredShare(points, rung, windows.early);
  const late = offeredShare(points, rung, windows.late);
  return passRate === undefined || early === undefined || late === undefined
    ? undefined
    : { rung, passRate, early, late };
}

/** The shifts of the rungs the Reasoner mastered over the mastery window (above `MASTERED_PASS_RATE`). */
export function masteredRungShifts(points: readonly LadderPoint[], windows: LadderWindows): RungShift[] {
  return RUNGS.flatMap((rung) => {
    const shift = rungShift(points, rung, windows);
    return shift && shift.passRate > MASTERED_PASS_RATE ? [shift] : [];
  });
}

/**
 * The windows a run of `iterations` is read with: mastery and early over the first five iterations, late the
 * second half. Five, not the first two: on its 5 or so no-carry documents an iteration's share of `add` moved
 * between 0 and 56 % in the measured runs, so a two-iteration average sat 11 points below the five-iteration
 * one in one run of seven (26.5 against 37.7 %, the learning test's own configuration) and 20 above in another
 * (51.6 against 32.1 %), and the fall measured from it mostly measured that draw.
 */
export function ladderWindows(iterations: number): LadderWindows {
  const first = { from: 1, to: Math.min(5, iterations) };
  return { mastery: first, early: first, late: { from: Math.floor(iterations / 2) + 1, to: iterations } };
}

/**
 * The lowest and highest mean pass rate of the Reasoner on the Challenger's valid tasks over any `width`
 * consecutive iterations. Averaged over a few iterations because one iteration's 16 documents move it by
 * about 8 points on their own (how many offer the no-carry rungs is the corpus's draw); a Challenger off the
 * frontier moves it for good. Undefined for a run shorter than `width`.
 */
export function passRateBand(
  points: ReadonlyArray<Pick<SpicePoint, 'meanPassRate'>>,
  width = BAND_WINDOW,
): { min: number; max: number } | undefined {
  if (points.length < width) return undefined;
  const means = points
    .slice(width - 1)
    .map((_, i) => sum(points.slice(i, i + width).map((p) => p.meanPassRate)) / width);
  return { min: Math.min(...means), max: Math.max(...means) };
}
