/**
 * Mathematical equivalence of two final answers, standing in for the paper's Math-Verify (§2.2): each answer
 * is normalised (answer-text.ts), read into a small tree of lists, sets, intervals, matrices, relations and
 * expressions (answer-structure.ts) and compared (answer-compare.ts): numbers exactly, expressions at random
 * points over the reals, equations and inequalities up to scaling and rearrangement. docs/answer-checking.md
 * has the measured agreement with the field's public suites.
 *
 * Everything here is bounded by the size of the answer (at most MAX_ANSWER_CHARS) and the size caps of
 * exact.ts, but a check still runs in the answer-checker pool (answer-checker-pool.ts) under a hard time
 * limit; only the gate's quick type checks (isParsableMath, numericValue) run inline.
 */
import { numericValueAt } from './expression-value';
import { freeVariables } from './expression';
import { hasPercent, normalizeAnswer, plainText, withoutPercent } from './answer-text';
import { readAnswer, type Answer } from './answer-structure';
import { sameAnswer, sameConstant } from './answer-compare';

/** Longer answers are not answers; refusing them bounds every step after. */
export const MAX_ANSWER_CHARS = 1000;

export type EquivalenceVerdict = 'equivalent' | 'different' | 'unparsable';

/**
 * The verdict for a predicted answer against the gold one. `unparsable`: either is empty or too long, or
 * the prediction reads only as text where the gold is math. With `numbersOnly`, both must be numbers.
 */
export function checkEquivalence(predicted: string, gold: string, numbersOnly = false): EquivalenceVerdict {
  if (predicted.length > MAX_ANSWER_CHARS || gold.length > MAX_ANSWER_CHARS) return 'unparsable';
  const p = normalizeAnswer(predicted);
  const g = normalizeAnswer(gold);
  if (p === '' || g === '') return 'unparsable';
  const verdict = compare(p, g, numbersOnly);
  if (verdict !== 'different' || hasPercent(p) === hasPercent(g)) return verdict;
  // A percentage on one side only: `50\%` also matches `50` (questions ask "what percent", answers omit it).
  return compare(withoutPercent(p), withoutPercent(g), numbersOnly) === 'equivalent' ? 'equivalent' : verdict;
}

function compare(p: string, g: string, numbersOnly: boolean): EquivalenceVerdict {
  // Identical text is equal even where it is not math (Math-Verify also compares strings first).
  if (!numbersOnly && plainText(p) === plainText(g)) return 'equivalent';
  const a = readAnswer(p);
  const b = readAnswer(g);
  if (a === undefined || b === undefined) return 'unparsable';
  if (numbersOnly) {
    const [x, y] = [numberOf(a), numberOf(b)];
    if (x === undefined || y === undefined) return 'unparsable';
    return sameConstant(x, y) ? 'equivalent' : 'different';
  }
  if (sameAnswer(a, b)) return 'equivalent';
  return a.kind === 'text' && b.kind !== 'text' ? 'unparsable' : 'different';
}

/** The answer when it is one number without variables (`42`, `x = 42`, `\frac{84}{2}`). */
function numberOf(answer: Answer): Extract<Answer, { kind: 'expr' }> | undefined {
  const value = answer.kind === 'relation' ? answer.value : answer;
  return value?.kind === 'expr' && freeVariables(value.expr).length === 0 ? value : undefined;
}

/** Whether two answers are mathematically equal; false for anything that does not read. Never throws. */
export function mathEquivalent(predicted: string, gold: string): boolean {
  return checkEquivalence(predicted, gold) === 'equivalent';
}

/** Like mathEquivalent, but both answers must be plain numbers (no free variables). */
export function numericallyEquivalent(predicted: string, gold: string): boolean {
  return checkEquivalence(predicted, gold, true) === 'equivalent';
}

/** Whether the text is one formula: an expression or an equation of expressions (not a list or text). */
export function isParsableMath(text: string): boolean {
  if (text.length > MAX_ANSWER_CHARS) return false;
  const answer = readAnswer(normalizeAnswer(text));
  if (answer?.kind === 'relation') return answer.sides.every((side) => side !== undefined);
  return answer?.kind === 'expr';
}

/**
 * The value of an answer that is a plain number (`42`, `1{,}000`, `\frac{84}{2}`), or undefined. A double,
 * without the exact BigInt arithmetic, so the inline gate checks stay cheap for any input.
 */
export function numericValue(text: string): number | undefined {
  if (text.length > MAX_ANSWER_CHARS) return undefined;
  const answer = readAnswer(normalizeAnswer(text));
  const number = answer && numberOf(answer);
  if (number === undefined) return undefined;
  const value = numericValueAt(number.expr, {}, false);
  return Number.isNaN(value.re) ? undefined : value.re;
}
