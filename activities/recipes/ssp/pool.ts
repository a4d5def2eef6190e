import { parseRecipeState } from '../state';
import { z } from 'zod';
import type { SspParams } from '../../../config/presets/ssp';
import type { Rng } from '../../lib/rng';
import { squadNormalize } from '../../scoring/cover-exact-match';
import type { PoolProblem, Problem, SspState } from './records';

/**
 * The replay pool (ssp.md §1.6): verified problems with their solver success rates, the recipe state. An
 * invalid slot's solver group trains on a problem drawn from it; it is emptied after every `resetEvery`
 * iterations (periodic reset, the paper's best setting in Table 5), and each iteration's own verified
 * problems enter it once: a reused problem is never re-added (the code's duplicate pitfall, §7).
 */

const stateSchema = z.strictObject({
  v: z.literal(1),
  pool: z.array(
    z.strictObject({
      question: z.string(),
      answer: z.string(),
      successRate: z.number().min(0).max(1),
      iteration: z.number().int().min(0),
    }),
  ),
});

export const EMPTY_STATE: SspState = { v: 1, pool: [] };

/** The committed state, or an empty pool on the first iteration. */
export function readState(state: unknown): SspState {
  if (state === undefined) return EMPTY_STATE;
  return parseRecipeState(stateSchema, state, "SSP's replay pool");
}

/** A problem drawn uniformly from the pool; undefined when it is empty or replay is off (dummy padding). */
export function drawReplacement(state: SspState, replay: SspParams['replay'], rng: Rng): Problem | undefined {
  if (!replay.enabled || state.pool.length === 0) return undefined;
  const { question, answer } = rng.pick(state.pool);
  return { question, answer };
}

const problemKey = (p: Problem): string => `${squadNormalize(p.question)}\u0000${squadNormalize(p.answer)}`;

/**
 * The pool iteration `iteration + 1` draws from: empty after an iteration that ends a reset window
 * (iteration % resetEvery === 0), else the pool plus this iteration's verified problems whose success rate
 * is at most `maxSuccessRate`, each problem (normalised question and answer) at most once.
 */
export function nextState(
  state: SspState,
  iteration: number,
  added: readonly PoolProblem[],
  replay: SspParams['replay'],
): SspState {
  if (!replay.enabled || iteration % replay.resetEvery === 0) return EMPTY_STATE;
  const seen = new Set(state.pool.map(problemKey));
  const pool = [...state.pool];
  for (const p of added) {
    const key = problemKey(p);
    if (p.successRate > replay.maxSuccessRate || seen.has(key)) continue;
    seen.add(key);
    pool.push(p);
  }
  return { v: 1, pool };
}
