import type { Rng } from '../../lib/rng';

/**
 * Picks g of a document's Challenger attempts keeping the valid:invalid ratio of all attempts (Alg. 1,
 * step 2c). The valid count is g·V/N rounded half up (Math.round), raised to 1 when any attempt is valid
 * and clamped to what exists; the rounding rule is not in the paper. With g or fewer attempts, all are
 * kept. The chosen attempts keep their original order; the choice depends only on the rng.
 */
export function subsampleKeepingRatio<T>(
  attempts: readonly T[],
  isValid: (t: T) => boolean,
  g: number,
  rng: Rng,
): T[] {
  if (attempts.length <= g) return [...attempts];
  const valid: number[] = [];
  const invalid: number[] = [];
  attempts.forEach((attempt, index) => (isValid(attempt) ? valid : invalid).push(index));
  const minValid = valid.length > 0 ? 1 : 0;
  let validCount = Math.min(
    valid.length,
    Math.max(minValid, Math.round((g * valid.length) / attempts.length)),
  );
  // Too few invalid attempts to fill the rest: take more valid ones (they exist, since N > g).
  validCount = Math.max(validCount, g - invalid.length);
  const chosen = [...rng.sample(valid, validCount), ...rng.sample(invalid, g - validCount)];
  return chosen.sort((a, b) => a - b).map((index) => attempts[index] as T);
}
