import { seededRng } from '../activities/lib/rng';

/**
 * How many completion permits the client holds per busy slot at the server when every request asks for `n`
 * choices: a request takes its n permits (`SELFPLAY_INFERENCE_CONCURRENCY` counts completions) and gives them
 * back only when the response returns, once its longest choice ends, while the server frees each choice's slot
 * as that choice ends. The factor is n × E[longest of n] ÷ E[sum of n]: 1 without a tail, 3.07 for a
 * log-normal of σ 1 at n = 8 (2.59 at σ 0.8). `length(u1, u2)` is one completion's length for two uniforms in
 * (0, 1], as the scripted server draws it; the estimate is over `draws` seeded requests, so it is the same on
 * every machine.
 */
export function permitsPerBusySlot(
  length: (u1: number, u2: number) => number,
  n: number,
  draws = 20_000,
): number {
  const rng = seededRng('client-budget', n);
  const uniform = (): number => 1 - rng.next();
  let held = 0;
  let busy = 0;
  for (let i = 0; i < draws; i++) {
    const lengths = Array.from({ length: n }, () => length(uniform(), uniform()));
    held += n * Math.max(...lengths);
    busy += lengths.reduce((sum, l) => sum + l, 0);
  }
  return held / busy;
}

/**
 * The completions a client keeps in flight so that `slots` stay busy through the tails: the permits the
 * running requests hold (slots × `permitsPerBusySlot`) and one more round of slots queued at the server, so a
 * slot a choice frees is filled at once, not when the next response returns.
 */
export function clientBudget(slots: number, permitsPerSlot: number): number {
  return Math.ceil(slots * (permitsPerSlot + 1));
}

/**
 * The longest completion `length` can draw: the draw at either end of the first uniform (the log-normal's
 * largest normal deviate, capped by the server; a histogram's largest bin).
 */
export function longestLength(length: (u1: number, u2: number) => number): number {
  return Math.max(length(2 ** -32, 1), length(1, 1));
}

/**
 * An upper bound on a request's time at a server of `slots` slots, behind the rest of a client's `budget`
 * completions (all of them at most `longest` long): the slots work off what is ahead, (budget − n) × longest ÷
 * slots, then its own choices may each wait for one more slot to free and run one longest length.
 */
export function worstRequestSeconds(budget: number, slots: number, n: number, longest: number): number {
  return ((budget - n) / slots + 2) * longest;
}
