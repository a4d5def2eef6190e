import type { Rng } from '../lib/rng';

/**
 * `count` items drawn uniformly by a seeded stream (`seededRng(seed, iteration, 'propose', shard)`), so a
 * retried shard picks the same segments.
 *
 * Without replacement while `count <= items.length` (a partial Fisher-Yates, O(count) however large the
 * corpus). When `count` exceeds the pool, items repeat as evenly as possible: whole shuffled passes over the
 * pool, then a without-replacement draw for the remainder, so no item appears twice before every item has
 * appeared once.
 */
export function sampleSegments<T>(items: readonly T[], count: number, rng: Rng): T[] {
  return sampleIndices(items.length, count, rng).map((i) => items[i] as T);
}

/** The positions `sampleSegments` draws from n items: what a plan reads from a stored segment index. */
export function sampleIndices(n: number, count: number, rng: Rng): number[] {
  if (!Number.isInteger(count) || count < 0)
    throw new RangeError(`count must be a non-negative integer, got ${count}`);
  if (count === 0) return [];
  if (n === 0) throw new RangeError(`cannot sample ${count} segments from an empty corpus`);
  const out: number[] = [];
  for (let left = count; left > 0; left -= n) out.push(...drawDistinct(n, Math.min(left, n), rng));
  return out;
}

/** Partial Fisher-Yates over a sparse view of the indices: only swapped positions are stored. */
function drawDistinct(n: number, k: number, rng: Rng): number[] {
  const swapped = new Map<number, number>();
  const at = (i: number): number => swapped.get(i) ?? i;
  const out: number[] = [];
  for (let i = 0; i < k; i++) {
    const j = i + rng.int(n - i);
    const picked = at(j);
    swapped.set(j, at(i));
    out.push(picked);
  }
  return out;
}
