/**
 * Values of answer expressions, two ways. `exactValue`: a rational number computed with BigInt, or
 * undefined when the value is not rational (√2, π) or too large to keep exact. `numericValueAt`: a complex
 * double at given values of the variables, over the reals unless the answer names `i` — so `√x` is undefined
 * at negative x instead of imaginary, `x^{2/3}` is the real cube root squared, and `|x|` ≢ `x` shows at a
 * negative point. Every operation is bounded: exact sizes are capped (exact.ts), loops run at most
 * MAX_PRODUCT_TERMS times, and anything beyond falls back to log-gamma.
 */
import * as Q from './exact';
import type { Expr } from './expression';

export interface Complex {
  re: number;
  im: number;
}

/** Products longer than this (`\binom{x}{k}` at large k, `n!`) use log-gamma instead of a loop. */
const MAX_PRODUCT_TERMS = 1000;

/** Exact values already computed: sets compare items pairwise, and each item's value is needed many times. */
const exactValues = new WeakMap<Expr, Q.Rational | null>();

export function exactValue(expr: Expr): Q.Rational | undefined {
  let value = exactValues.get(expr);
  if (value === undefined) {
    value = computeExact(expr) ?? null;
    exactValues.set(expr, value);
  }
  return value ?? undefined;
}

function computeExact(expr: Expr): Q.Rational | undefined {
  switch (expr.op) {
    case 'num':
      return Q.parseDecimal(expr.text);
    case 'sym':
      return undefined;
    case 'neg': {
      const a = exactValue(expr.a);
      return a && Q.neg(a);
    }
    case 'fact': {
      const a = exactValue(expr.a);
      return a && Q.factorial(a);
    }
    case 'call':
      return exactCall(expr.fn, expr.args);
    default: {
      const a = exactValue(expr.a);
      const b = a && exactValue(expr.b);
      if (!a || !b) return undefined;
      if (expr.op === 'add') return Q.add(a, b);
      if (expr.op === 'sub') return Q.sub(a, b);
      if (expr.op === 'mul') return Q.mul(a, b);
      if (expr.op === 'div') return Q.div(a, b);
      return exactPower(a, b);
    }
  }
}

/** a^(p/q): the integer power of an exact q-th root (`8^{2/3}` = 4, `4^{1/2}` = 2). */
function exactPower(a: Q.Rational, b: Q.Rational): Q.Rational | undefined {
  if (Q.isInteger(b)) return Q.pow(a, b);
  if (b.d > 64n) return undefined;
  const r = Q.root(a, Number(b.d));
  return r && Q.pow(r, { n: b.n, d: 1n });
}

function exactCall(fn: string, args: Expr[]): Q.Rational | undefined {
  const values = args.map(exactValue);
  if (values.some((v) => v === undefined)) return undefined;
  const [a, b] = values as [Q.Rational, Q.Rational | undefined];
  switch (fn) {
    case 'sqrt':
      return Q.root(a, 2);
    case 'cbrt':
      return Q.root(a, 3);
    case 'nthRoot':
      return b && Q.isInteger(b) && b.n > 0n && b.n <= 64n ? Q.root(a, Number(b.n)) : undefined;
    case 'abs':
      return a.n < 0n ? Q.neg(a) : a;
    case 'factorial':
      return Q.factorial(a);
    case 'combinations':
      return b && Q.binomial(a, b);
    case 'floor':
    case 'ceil': {
      if (Q.isInteger(a)) return a;
      const down = a.n / a.d - (a.n < 0n ? 1n : 0n);
      return { n: fn === 'floor' ? down : down + 1n, d: 1n };
    }
    default:
      return undefined;
  }
}

const NAN: Complex = { re: NaN, im: NaN };
const real = (re: number): Complex => ({ re, im: 0 });
const isReal = (z: Complex): boolean => z.im === 0;

/**
 * The value at `scope`; NaN parts where the expression is undefined there (outside its real domain, a
 * division by zero, an overflow). `complex` allows non-real results (principal branches).
 */
export function numericValueAt(expr: Expr, scope: Record<string, number>, complex: boolean): Complex {
  const z = evaluate(expr, scope, complex);
  const ok = Number.isFinite(z.re) && Number.isFinite(z.im) && (complex || isReal(z));
  return ok ? z : NAN;
}

function evaluate(expr: Expr, scope: Record<string, number>, complex: boolean): Complex {
  const ev = (e: Expr): Complex => evaluate(e, scope, complex);
  const checked = (z: Complex): Complex => (complex || isReal(z) ? z : NAN);
  switch (expr.op) {
    case 'num':
      return real(Number(expr.text));
    case 'sym':
      return symbolValue(expr.name, scope);
    case 'neg': {
      const a = ev(expr.a);
      return { re: -a.re, im: -a.im };
    }
    case 'fact':
      return realOnly(ev(expr.a), factorial);
    case 'add':
    case 'sub': {
      const a = ev(expr.a);
      const b = ev(expr.b);
      const s = expr.op === 'add' ? 1 : -1;
      return { re: a.re + s * b.re, im: a.im + s * b.im };
    }
    case 'mul':
      return multiply(ev(expr.a), ev(expr.b));
    case 'div':
      return divide(ev(expr.a), ev(expr.b));
    case 'pow':
      return checked(power(ev(expr.a), expr.b, ev(expr.b), complex));
    case 'call':
      return checked(call(expr.fn, expr.args.map(ev), expr.args, complex));
  }
}

function symbolValue(name: string, scope: Record<string, number>): Complex {
  if (name === 'pi') return real(Math.PI);
  if (name === 'e') return real(Math.E);
  if (name === 'i') return { re: 0, im: 1 };
  if (name === 'Infinity') return real(Infinity);
  const v = scope[name];
  return v === undefined ? NAN : real(v);
}

function multiply(a: Complex, b: Complex): Complex {
  if (a.im === 0 && b.im === 0) return real(a.re * b.re);
  return { re: a.re * b.re - a.im * b.im, im: a.re * b.im + a.im * b.re };
}

function divide(a: Complex, b: Complex): Complex {
  if (b.re === 0 && b.im === 0) return NAN;
  if (a.im === 0 && b.im === 0) return real(a.re / b.re);
  const d = b.re * b.re + b.im * b.im;
  return { re: (a.re * b.re + a.im * b.im) / d, im: (a.im * b.re - a.re * b.im) / d };
}

function log(z: Complex): Complex {
  return { re: Math.log(Math.hypot(z.re, z.im)), im: Math.atan2(z.im, z.re) };
}

function exp(z: Complex): Complex {
  const m = Math.exp(z.re);
  return z.im === 0 ? real(m) : { re: m * Math.cos(z.im), im: m * Math.sin(z.im) };
}

/**
 * a^b. Over the reals a negative base takes an integer exponent, or a rational one with an odd denominator
 * read exactly from the exponent's expression (`(-8)^{1/3}` = −2, `x^{2/3}` at negative x is real).
 */
function power(a: Complex, exponent: Expr, b: Complex, complex: boolean): Complex {
  if (isReal(a) && isReal(b)) {
    if (a.re === 0 && b.re < 0) return NAN;
    if (a.re >= 0 || Number.isInteger(b.re)) return real(Math.pow(a.re, b.re));
    const q = literalFraction(exponent);
    if (q && q.d % 2n === 1n) {
      const magnitude = Math.pow(-a.re, b.re);
      return real(q.n % 2n === 0n ? magnitude : -magnitude);
    }
    if (!complex) return NAN;
  }
  if (a.re === 0 && a.im === 0) return b.re > 0 ? real(0) : NAN;
  if (isReal(b) && Number.isInteger(b.re) && Math.abs(b.re) <= 64) {
    let result = real(1);
    for (let k = 0; k < Math.abs(b.re); k++) result = multiply(result, a);
    return b.re < 0 ? divide(real(1), result) : result;
  }
  return exp(multiply(b, log(a)));
}

/** An exponent written as a fraction of integers (`2/3`, `-1/3`, `0.5`), read exactly; cheap by design. */
function literalFraction(e: Expr): Q.Rational | undefined {
  if (e.op === 'num') return Q.parseDecimal(e.text);
  if (e.op === 'neg') {
    const a = literalFraction(e.a);
    return a && Q.neg(a);
  }
  if (e.op !== 'div' || e.a.op !== 'num' || e.b.op !== 'num') return undefined;
  const [a, b] = [Q.parseDecimal(e.a.text), Q.parseDecimal(e.b.text)];
  return a && b && Q.div(a, b);
}

function realOnly(z: Complex, f: (x: number) => number): Complex {
  return isReal(z) ? real(f(z.re)) : NAN;
}

function call(fn: string, values: Complex[], args: Expr[], complex: boolean): Complex {
  const [a, b] = values as [Complex, Complex | undefined];
  switch (fn) {
    case 'sqrt':
      return power(a, { op: 'num', text: '0.5' }, real(0.5), complex);
    case 'cbrt':
      return realOnly(a, Math.cbrt);
    case 'nthRoot': {
      const n = b?.re ?? NaN;
      const index: Expr = { op: 'div', a: { op: 'num', text: '1' }, b: args[1] as Expr };
      return power(a, index, real(1 / n), complex);
    }
    case 'abs':
      return real(Math.hypot(a.re, a.im));
    case 'exp':
      return exp(a);
    case 'log': {
      if (!complex && (!isReal(a) || a.re <= 0)) return NAN;
      const ln = log(a);
      if (b === undefined) return ln;
      if (!complex && (!isReal(b) || b.re <= 0)) return NAN;
      return divide(ln, log(b));
    }
    case 'log10':
      return divide(log(a), real(Math.LN10));
    case 'log2':
      return divide(log(a), real(Math.LN2));
    case 'factorial':
      return realOnly(a, factorial);
    case 'combinations':
      return b && isReal(a) && isReal(b) ? real(binomial(a.re, b.re)) : NAN;
    default:
      return realOnly(a, REAL_FUNCTIONS[fn] ?? (() => NaN));
  }
}

const REAL_FUNCTIONS: Readonly<Record<string, (x: number) => number>> = {
  sin: Math.sin,
  cos: Math.cos,
  tan: Math.tan,
  sec: (x) => 1 / Math.cos(x),
  csc: (x) => 1 / Math.sin(x),
  cot: (x) => 1 / Math.tan(x),
  asin: Math.asin,
  acos: Math.acos,
  atan: Math.atan,
  sinh: Math.sinh,
  cosh: Math.cosh,
  tanh: Math.tanh,
  floor: Math.floor,
  ceil: Math.ceil,
};

/** x! = Γ(x + 1); undefined at negative integers. */
function factorial(x: number): number {
  if (Number.isInteger(x)) {
    if (x < 0) return NaN;
    if (x > 170) return Infinity;
    let p = 1;
    for (let k = 2; k <= x; k++) p *= k;
    return p;
  }
  return gamma(x + 1);
}

/** C(x, k): for an integer k ≥ 0 the falling factorial over k! (a polynomial in x), else by Γ. */
function binomial(x: number, k: number): number {
  if (Number.isInteger(k)) {
    if (k < 0) return 0;
    if (Number.isInteger(x) && x >= 0 && k > x) return 0;
    if (k <= MAX_PRODUCT_TERMS) {
      let p = 1;
      for (let j = 0; j < k; j++) p = (p * (x - j)) / (j + 1);
      return p;
    }
  }
  if (x < 0 || k < 0 || x - k < 0) return NaN;
  return Math.exp(logGamma(x + 1) - logGamma(k + 1) - logGamma(x - k + 1));
}

/** Lanczos approximation (g = 7, n = 9), accurate to about 15 digits. */
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

function logGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logGamma(1 - x);
  const y = x - 1;
  let sum = LANCZOS[0] as number;
  for (let k = 1; k < LANCZOS.length; k++) sum += (LANCZOS[k] as number) / (y + k);
  const t = y + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (y + 0.5) * Math.log(t) - t + Math.log(sum);
}

function gamma(x: number): number {
  if (Number.isInteger(x) && x <= 0) return NaN;
  if (x < 0.5) return Math.PI / (Math.sin(Math.PI * x) * gamma(1 - x));
  return Math.exp(logGamma(x));
}
