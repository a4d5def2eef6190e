/**
 * Numeric answers as DocMath scores them (spell.md §1.7, financial math): a prediction is right within a
 * relative tolerance of 0.15% of the reference, also when it is stated at another scale (×1e2 for
 * percentages, ×1e3 / ×1e6 / ×1e9 for thousands, millions, billions, in either direction), or when both
 * agree after rounding to 3 decimals.
 */

export const DOCMATH_TOLERANCE = 0.0015;
const SCALES = [1e2, 1e3, 1e6, 1e9] as const;

/**
 * The first number in an answer: `$1,234.5 million` → 1234.5, `-12%` → −12, `(3.5)` → 3.5. Thousands
 * separators are dropped only between digit groups, so `1,5` stays two numbers. Undefined when there is none.
 */
export function parseNumber(text: string): number | undefined {
  const match = /[-−]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[-−]?\d+(?:\.\d+)?|[-−]?\.\d+/.exec(text);
  if (!match) return undefined;
  const value = Number(match[0].replace(/,/g, '').replace('−', '-'));
  return Number.isFinite(value) ? value : undefined;
}

/** The bound is inclusive; 1e-9 of slack keeps binary rounding (100 − 99.85 = 0.15000000000000568) inside it. */
const within = (predicted: number, gold: number, tolerance: number): boolean =>
  Math.abs(predicted - gold) <= (tolerance + 1e-9) * Math.abs(gold);

const round3 = (x: number): number => Math.round(x * 1000) / 1000;

export function numbersMatch(predicted: number, gold: number, tolerance = DOCMATH_TOLERANCE): boolean {
  if (!Number.isFinite(predicted) || !Number.isFinite(gold)) return false;
  if (within(predicted, gold, tolerance) || round3(predicted) === round3(gold)) return true;
  return SCALES.some((s) => within(predicted * s, gold, tolerance) || within(predicted, gold * s, tolerance));
}
