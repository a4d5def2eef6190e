import { createHash } from 'node:crypto';

/**
 * A seeded random stream derived from named parts, e.g. `(seed, iteration, 'propose', shard, doc)`, so a
 * retried shard makes exactly the same choices as the attempt it replaces.
 */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  pick<T>(items: readonly T[]): T;
  /** A shuffled copy (Fisher-Yates). */
  shuffle<T>(items: readonly T[]): T[];
  /** k distinct items, in sampled order. */
  sample<T>(items: readonly T[], k: number): T[];
}

/** A 32-bit integer derived from the parts; also usable as an inference request seed. */
export function seedOf(...parts: Array<string | number>): number {
  const digest = createHash('sha256').update(parts.map(String).join('\u0000')).digest();
  return digest.readUInt32LE(0);
}

export function seededRng(...parts: Array<string | number>): Rng {
  // mulberry32: small, fast and good enough for sampling decisions (not for cryptography).
  let state = seedOf(...parts);
  const next = (): number => {
    state = (state + 0x6d2b79f5) | 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number): number => {
    if (!Number.isInteger(n) || n <= 0) throw new RangeError(`int(n) needs a positive integer, got ${n}`);
    return Math.floor(next() * n);
  };
  const shuffle = <T>(items: readonly T[]): T[] =>
    Array.from(shuffledRange({ int }, items.length), (i) => items[i] as T);
  return {
    next,
    int,
    shuffle,
    pick: (items) => {
      if (items.length === 0) throw new RangeError('pick() from an empty list');
      return items[int(items.length)] as (typeof items)[number];
    },
    sample: (items, k) => shuffle(items).slice(0, Math.max(0, Math.min(k, items.length))),
  };
}

/**
 * A Fisher-Yates permutation of 0..n-1 drawn from `rng`, in a typed array: 4 bytes a position, for permutations
 * of every segment of a large corpus. `rng.shuffle` applies the same permutation to its items.
 */
export function shuffledRange(rng: Pick<Rng, 'int'>, n: number): Uint32Array {
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    const t = out[i] as number;
    out[i] = out[j] as number;
    out[j] = t;
  }
  return out;
}
