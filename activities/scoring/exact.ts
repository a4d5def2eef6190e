/**
 * Exact rational numbers on BigInt, for answers whose gold is exact: `1000000` and `1000001` differ, `1000!`
 * and `999!` differ, `2^{100}` equals its 31 digits. Every operation refuses (returns undefined) a result
 * longer than MAX_DIGITS, so the work on any input stays bounded; the caller then falls back to floats.
 */

/** The longest numerator or denominator kept exact, in decimal digits (1000! has 2568). */
const MAX_DIGITS = 20000;
/** Bits for MAX_DIGITS digits (log2(10) ≈ 3.33); sizes are checked in bits, which is cheap. */
const MAX_BITS = Math.ceil(MAX_DIGITS * 3.33);
/** The largest n whose n! is computed exactly (5000! has 16326 digits). */
const MAX_FACTORIAL = 5000;

export interface Rational {
  /** Numerator; the sign lives here. */
  n: bigint;
  /** Denominator, always positive; the fraction is in lowest terms. */
  d: bigint;
}

const ZERO: Rational = { n: 0n, d: 1n };
const ONE: Rational = { n: 1n, d: 1n };

const abs = (x: bigint): bigint => (x < 0n ? -x : x);

function gcd(a: bigint, b: bigint): bigint {
  let x = abs(a);
  let y = abs(b);
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

function bits(x: bigint): number {
  return abs(x).toString(16).length * 4;
}

function fits(x: bigint): boolean {
  return bits(x) <= MAX_BITS;
}

/** n/d in lowest terms, or undefined for a zero denominator or a result over the size limit. */
export function rational(n: bigint, d: bigint = 1n): Rational | undefined {
  if (d === 0n) return undefined;
  const sign = d < 0n ? -1n : 1n;
  const g = gcd(n, d);
  const r = { n: (sign * n) / (g === 0n ? 1n : g), d: (sign * d) / (g === 0n ? 1n : g) };
  return fits(r.n) && fits(r.d) ? r : undefined;
}

/** A decimal literal (`12`, `-0.125`, `6.02e23`) exactly; undefined for anything else. */
export function parseDecimal(text: string): Rational | undefined {
  const m = /^(-?)(\d*)(?:\.(\d*))?(?:e([+-]?\d+))?$/i.exec(text.trim());
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return undefined;
  const fraction = m[3] ?? '';
  const exponent = Number(m[4] ?? '0') - fraction.length;
  if (Math.abs(exponent) > MAX_DIGITS) return undefined;
  let n = BigInt(`${m[2] || '0'}${fraction}`);
  if (m[1] === '-') n = -n;
  return exponent >= 0 ? rational(n * 10n ** BigInt(exponent)) : rational(n, 10n ** BigInt(-exponent));
}

export const add = (a: Rational, b: Rational): Rational | undefined =>
  rational(a.n * b.d + b.n * a.d, a.d * b.d);
export const sub = (a: Rational, b: Rational): Rational | undefined =>
  rational(a.n * b.d - b.n * a.d, a.d * b.d);
export const mul = (a: Rational, b: Rational): Rational | undefined => rational(a.n * b.n, a.d * b.d);
export const div = (a: Rational, b: Rational): Rational | undefined => rational(a.n * b.d, a.d * b.n);
export const neg = (a: Rational): Rational => ({ n: -a.n, d: a.d });
export const equals = (a: Rational, b: Rational): boolean => a.n === b.n && a.d === b.d;
export const isInteger = (a: Rational): boolean => a.d === 1n;

/** a^e for an integer exponent, when the result stays within the size limit (checked before computing). */
export function pow(a: Rational, e: Rational): Rational | undefined {
  if (!isInteger(e)) return undefined;
  if (e.n === 0n) return ONE;
  if (a.n === 0n) return e.n > 0n ? ZERO : undefined;
  const size = Math.max(bits(a.n), bits(a.d));
  if (size > 1 && Number(abs(e.n)) * (size - 1) > MAX_BITS) return undefined;
  const k = abs(e.n);
  const p = { n: a.n ** k, d: a.d ** k };
  return e.n > 0n ? rational(p.n, p.d) : rational(p.d, p.n);
}

/** The exact k-th root of a rational that is a perfect k-th power (`\sqrt{4/9}`), else undefined. */
export function root(a: Rational, k: number): Rational | undefined {
  if (!Number.isInteger(k) || k < 1 || k > 64) return undefined;
  if (a.n < 0n && k % 2 === 0) return undefined;
  const n = integerRoot(abs(a.n), k);
  const d = integerRoot(a.d, k);
  if (n === undefined || d === undefined) return undefined;
  return rational(a.n < 0n ? -n : n, d);
}

function integerRoot(x: bigint, k: number): bigint | undefined {
  if (x < 2n) return x;
  const K = BigInt(k);
  // Newton's iteration from an upper bound; converges in O(log) steps for these sizes.
  let r = 1n << BigInt(Math.ceil(bits(x) / k) + 1);
  for (;;) {
    const next = ((K - 1n) * r + x / r ** (K - 1n)) / K;
    if (next >= r) break;
    r = next;
  }
  return r ** K === x ? r : undefined;
}

export function factorial(a: Rational): Rational | undefined {
  if (!isInteger(a) || a.n < 0n || a.n > BigInt(MAX_FACTORIAL)) return undefined;
  let p = 1n;
  for (let i = 2n; i <= a.n; i++) p *= i;
  return { n: p, d: 1n };
}

/** C(n, k) for integers n ≥ 0 and 0 ≤ k, when min(k, n−k) ≤ MAX_FACTORIAL; otherwise undefined. */
export function binomial(n: Rational, k: Rational): Rational | undefined {
  if (!isInteger(n) || !isInteger(k)) return undefined;
  if (k.n < 0n) return ZERO;
  if (n.n >= 0n && k.n > n.n) return ZERO;
  const kk = n.n >= 0n && n.n - k.n < k.n ? n.n - k.n : k.n;
  if (kk > BigInt(MAX_FACTORIAL)) return undefined;
  let num = 1n;
  let den = 1n;
  for (let i = 0n; i < kk; i++) {
    num *= n.n - i;
    den *= i + 1n;
    if (!fits(num)) return undefined;
  }
  return rational(num, den);
}

/** Whether a/b has a finite decimal expansion (the denominator has no prime factor but 2 and 5). */
export function isTerminating(a: Rational): boolean {
  let d = a.d;
  while (d % 2n === 0n) d /= 2n;
  while (d % 5n === 0n) d /= 5n;
  return d === 1n;
}

/** The nearest double (exact to within rounding for sizes that fit a double; ±Infinity beyond). */
export function toNumber(a: Rational): number {
  const n = Number(a.n);
  const d = Number(a.d);
  if (Number.isFinite(n) && Number.isFinite(d)) return n / d;
  // Scale both down to keep their ratio representable.
  const shift = BigInt(Math.max(0, Math.max(bits(a.n), bits(a.d)) - 1000));
  return Number(a.n >> shift) / Number(a.d >> shift);
}
