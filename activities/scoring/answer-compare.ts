/**
 * Whether two read answers (answer-structure.ts) are mathematically the same.
 *
 * - Numbers without variables: exactly, as BigInt rationals, when both are exact (`1000000` ≢ `1000001`,
 *   `1000!` ≢ `999!`). A decimal literal against a value it cannot equal exactly (`0.3333` vs `\frac13`,
 *   `1.414` vs `\sqrt2`) matches when it is that value rounded to its own places and has at least
 *   MIN_ROUNDED_DIGITS significant digits; against a terminating value (`2` vs `2.000001`) it must be equal.
 *   Irrational constants compare as doubles with a relative 1e-9.
 * - Expressions with variables: at seeded random points drawn from positive, negative and wide ranges, over
 *   the reals. They must be defined at the same points (`\ln(x^2)` ≢ `2\ln x`) and agree where they are.
 * - Equations and inequalities: `lhs − rhs` of one is a constant multiple of the other's (positive for an
 *   inequality, after turning `>` into `<`), so scaled and rearranged forms match.
 */
import * as Q from './exact';
import { exactValue, numericValueAt, type Complex } from './expression-value';
import { freeVariables, mentionsImaginaryUnit, type Expr } from './expression';
import type { Answer, Endpoint, RelationOp } from './answer-structure';
import { seededRng } from '../lib/rng';

const MIN_ROUNDED_DIGITS = 4;
const CONSTANT_TOLERANCE = 1e-9;
const POINT_RELATIVE_TOLERANCE = 1e-8;
const POINT_ABSOLUTE_TOLERANCE = 1e-10;
const MAX_POINTS = 48;
const WANTED_POINTS = 8;
const MIN_POINTS = 3;
/** Where variables are drawn from, in turn: small positive, small negative, wide. */
const RANGES: ReadonlyArray<[number, number]> = [
  [0.1, 3],
  [-3, -0.1],
  [-10, 10],
  [-100, 100],
];

type Kind = Answer['kind'];
type Of<K extends Kind> = Extract<Answer, { kind: K }>;

export function sameAnswer(a: Answer, b: Answer): boolean {
  if (a.kind === 'relation' || b.kind === 'relation') return sameRelational(a, b);
  if (a.kind === 'list' && a.items.length === 1 && a.brackets === 'none')
    return sameAnswer(a.items[0] as Answer, b);
  if (b.kind === 'list' && b.items.length === 1 && b.brackets === 'none')
    return sameAnswer(a, b.items[0] as Answer);
  if (a.kind === 'expr' && b.kind === 'expr') return sameExpression(a, b);
  if (a.kind === 'list' && b.kind === 'list') return sameList(a, b);
  if (isSetLike(a) && isSetLike(b)) return sameSet(asUnion(a), asUnion(b));
  if (a.kind === 'matrix' && b.kind === 'matrix') return sameMatrix(a, b);
  if (a.kind === 'ratio' || b.kind === 'ratio') return sameRatio(a, b);
  if (a.kind === 'text' && b.kind === 'text') return a.text === b.text;
  return false;
}

function sameRelational(a: Answer, b: Answer): boolean {
  if (a.kind === 'relation' && b.kind === 'relation') {
    if (sameRelation(a, b)) return true;
    if (a.label !== undefined && a.label === b.label && a.value && b.value)
      return sameAnswer(a.value, b.value);
    return a.set !== undefined && b.set !== undefined && sameAnswer(a.set, b.set);
  }
  const [r, other] = (a.kind === 'relation' ? [a, b] : [b, a]) as [Of<'relation'>, Answer];
  if (r.value && sameAnswer(r.value, other)) return true;
  return r.set !== undefined && isSetLike(other) && sameAnswer(r.set, other);
}

function isSetLike(a: Answer): boolean {
  return a.kind === 'interval' || a.kind === 'union' || (a.kind === 'list' && a.brackets === 'pair');
}

function asUnion(a: Answer): Answer[] {
  if (a.kind === 'union') return a.parts;
  return [a];
}

/** Unions compare part by part, in any order; a pair `(a, b)` is the open interval here. */
function sameSet(a: Answer[], b: Answer[]): boolean {
  const intervalOf = (x: Answer): Answer =>
    x.kind === 'list' && x.brackets === 'pair'
      ? {
          kind: 'interval',
          lo: { expr: (x.items[0] as Of<'expr'>).expr, closed: false },
          hi: { expr: (x.items[1] as Of<'expr'>).expr, closed: false },
        }
      : x;
  const pairsAreExprs = [...a, ...b].every(
    (x) => !(x.kind === 'list' && x.brackets === 'pair') || x.items.every((i) => i.kind === 'expr'),
  );
  if (!pairsAreExprs) return false;
  return sameUnordered(a.map(intervalOf), b.map(intervalOf), samePart);
}

function samePart(a: Answer, b: Answer): boolean {
  if (a.kind === 'interval' && b.kind === 'interval') {
    return (
      a.lo.closed === b.lo.closed &&
      a.hi.closed === b.hi.closed &&
      sameEndpoint(a.lo, b.lo) &&
      sameEndpoint(a.hi, b.hi)
    );
  }
  return sameAnswer(a, b);
}

function sameEndpoint(a: Endpoint, b: Endpoint): boolean {
  const ia = infinitySign(a.expr);
  const ib = infinitySign(b.expr);
  if (ia !== 0 || ib !== 0) return ia === ib;
  return sameExpression({ kind: 'expr', expr: a.expr }, { kind: 'expr', expr: b.expr });
}

function infinitySign(e: Expr): number {
  if (e.op === 'sym' && e.name === 'Infinity') return 1;
  if (e.op === 'neg') return -infinitySign(e.a);
  return 0;
}

/**
 * Tuples and pairs compare in order, and so does a tuple against a bare list; bare lists, sets and the
 * values of `±` compare as sets (each item of one equals some item of the other).
 */
function sameList(a: Of<'list'>, b: Of<'list'>): boolean {
  const ordered = (x: Of<'list'>): boolean => x.brackets === 'tuple' || x.brackets === 'pair';
  if (ordered(a) || ordered(b)) {
    if (a.brackets === 'set' || b.brackets === 'set') return false;
    return a.items.length === b.items.length && a.items.every((x, i) => sameAnswer(x, b.items[i] as Answer));
  }
  return sameUnordered(a.items, b.items, sameAnswer);
}

function sameUnordered(a: Answer[], b: Answer[], same: (x: Answer, y: Answer) => boolean): boolean {
  const covers = (xs: Answer[], ys: Answer[]): boolean => xs.every((x) => ys.some((y) => same(x, y)));
  return covers(a, b) && covers(b, a);
}

function sameMatrix(a: Of<'matrix'>, b: Of<'matrix'>): boolean {
  return (
    a.rows.length === b.rows.length &&
    a.rows.every(
      (row, i) =>
        row.length === (b.rows[i] as Answer[]).length &&
        row.every((cell, j) => sameAnswer(cell, (b.rows[i] as Answer[])[j] as Answer)),
    )
  );
}

/** `a:b` ≡ `c:d` when a/b = c/d (second terms non-zero); a ratio also equals the value a/b. */
function sameRatio(a: Answer, b: Answer): boolean {
  const valueOf = (x: Answer): Of<'expr'> | undefined => {
    if (x.kind === 'expr') return x;
    if (x.kind !== 'ratio') return undefined;
    const [p, q] = x.terms;
    const denominator = exactValue(q);
    if (denominator === undefined || denominator.n === 0n) return undefined;
    return { kind: 'expr', expr: { op: 'div', a: p, b: q } };
  };
  const [x, y] = [valueOf(a), valueOf(b)];
  return x !== undefined && y !== undefined && sameExpression(x, y);
}

function sameExpression(a: Of<'expr'>, b: Of<'expr'>): boolean {
  const variables = [...new Set([...freeVariables(a.expr), ...freeVariables(b.expr)])].sort();
  if (variables.length === 0) return sameConstant(a, b);
  const complex = mentionsImaginaryUnit(a.expr) || mentionsImaginaryUnit(b.expr);
  return agreeAtPoints(a.expr, b.expr, variables, complex, (x, y) => close(x, y));
}

/** Two answers without variables; see the module comment. */
export function sameConstant(a: Of<'expr'>, b: Of<'expr'>): boolean {
  const [qa, qb] = [exactValue(a.expr), exactValue(b.expr)];
  if (a.decimal && !b.decimal) return decimalMatches(a, b, qb);
  if (b.decimal && !a.decimal) return decimalMatches(b, a, qa);
  if (qa && qb) return Q.equals(qa, qb);
  // At least one side is not exact (irrational, complex or too large): as doubles, never for overflowed values.
  const complex = mentionsImaginaryUnit(a.expr) || mentionsImaginaryUnit(b.expr);
  return closeConstants(a.expr, b.expr, complex);
}

function closeConstants(a: Expr, b: Expr, complex: boolean): boolean {
  const x = numericValueAt(a, {}, complex);
  const y = numericValueAt(b, {}, complex);
  if (Number.isNaN(x.re) || Number.isNaN(y.re)) return false;
  const distance = Math.hypot(x.re - y.re, x.im - y.im);
  return (
    distance <= CONSTANT_TOLERANCE * Math.max(Math.hypot(x.re, x.im), Math.hypot(y.re, y.im), 1e-300) ||
    distance === 0
  );
}

/**
 * A decimal literal against another value: equal when that value is exact and terminating, else when the
 * decimal is the value rounded to the decimal's places (with at least MIN_ROUNDED_DIGITS digits).
 */
function decimalMatches(decimal: Of<'expr'>, other: Of<'expr'>, exactOther: Q.Rational | undefined): boolean {
  const exactDecimal = exactValue(decimal.expr);
  if (!exactDecimal || !decimal.decimal) return false;
  if (exactOther && Q.isTerminating(exactOther)) return Q.equals(exactDecimal, exactOther);
  if (decimal.decimal.significant < MIN_ROUNDED_DIGITS) return false;
  const v = exactOther ? { re: Q.toNumber(exactOther), im: 0 } : numericValueAt(other.expr, {}, false);
  if (Number.isNaN(v.re) || v.im !== 0) return false;
  const d = Q.toNumber(exactDecimal);
  const halfUnit = 0.5 * 10 ** -decimal.decimal.places;
  return Math.abs(d - v.re) <= halfUnit * (1 + 1e-9) + 4 * Number.EPSILON * Math.abs(v.re);
}

function close(x: Complex, y: Complex): boolean {
  const distance = Math.hypot(x.re - y.re, x.im - y.im);
  const scale = Math.max(Math.hypot(x.re, x.im), Math.hypot(y.re, y.im));
  return distance <= POINT_RELATIVE_TOLERANCE * scale + POINT_ABSOLUTE_TOLERANCE;
}

/**
 * Whether `agree` holds at every sampled point where either side is defined; a point where only one side
 * is defined is a disagreement. Undecided (false) with fewer than MIN_POINTS points where both are.
 */
function agreeAtPoints(
  a: Expr,
  b: Expr,
  variables: string[],
  complex: boolean,
  agree: (x: Complex, y: Complex) => boolean,
): boolean {
  const rng = seededRng('answer-compare', ...variables);
  let usable = 0;
  for (let point = 0; point < MAX_POINTS && usable < WANTED_POINTS; point++) {
    const [lo, hi] = RANGES[point % RANGES.length] as [number, number];
    const scope = Object.fromEntries(variables.map((v) => [v, lo + (hi - lo) * rng.next()]));
    const x = numericValueAt(a, scope, complex);
    const y = numericValueAt(b, scope, complex);
    const [definedX, definedY] = [!Number.isNaN(x.re), !Number.isNaN(y.re)];
    if (definedX !== definedY) return false;
    if (!definedX) continue;
    if (!agree(x, y)) return false;
    usable++;
  }
  return usable >= MIN_POINTS;
}

type Oriented = { op: '<' | '<=' | '=' | '!='; difference: Expr };

/** `a > b` → `b − a < 0`: every relation as `difference op 0` with op one of <, ≤, =, ≠. */
function orient(lhs: Expr, op: RelationOp, rhs: Expr): Oriented {
  if (op === '>' || op === '>=')
    return { op: op === '>' ? '<' : '<=', difference: { op: 'sub', a: rhs, b: lhs } };
  return { op, difference: { op: 'sub', a: lhs, b: rhs } };
}

/** Same chain shape, and each link's difference a constant multiple of the other's (positive for <, ≤). */
function sameRelation(a: Of<'relation'>, b: Of<'relation'>): boolean {
  if (a.ops.length !== b.ops.length) return false;
  return a.ops.every((_, i) => {
    const [l1, r1, l2, r2] = [a.sides[i], a.sides[i + 1], b.sides[i], b.sides[i + 1]];
    if (!l1 || !r1 || !l2 || !r2) return false;
    const x = orient(l1, a.ops[i] as RelationOp, r1);
    const y = orient(l2, b.ops[i] as RelationOp, r2);
    return x.op === y.op && proportional(x.difference, y.difference, x.op === '<' || x.op === '<=');
  });
}

function proportional(a: Expr, b: Expr, positive: boolean): boolean {
  const variables = [...new Set([...freeVariables(a), ...freeVariables(b)])].sort();
  if (variables.length === 0) return false;
  let ratio: number | undefined;
  return agreeAtPoints(a, b, variables, false, (x, y) => {
    if (Math.abs(y.re) < POINT_ABSOLUTE_TOLERANCE || Math.abs(x.re) < POINT_ABSOLUTE_TOLERANCE)
      return Math.abs(x.re) < POINT_ABSOLUTE_TOLERANCE && Math.abs(y.re) < POINT_ABSOLUTE_TOLERANCE;
    const r = x.re / y.re;
    if (positive && r <= 0) return false;
    ratio ??= r;
    return Math.abs(r - ratio) <= POINT_RELATIVE_TOLERANCE * Math.abs(ratio);
  });
}
