/**
 * Mathematical equivalence of two answers with mathjs, standing in for the paper's Math-Verify (§2.2):
 * numbers compare by value (`1/2` ≡ `0.5`), expressions by value at seeded random points, with a symbolic
 * `simplify(a - b) = 0` check when too few points evaluate. The points run first because they are cheap and
 * a point where both sides evaluate and differ proves the answers differ; simplify only decides the rest.
 *
 * Choices not in the paper:
 * - `x = 5` ≡ `5`: an equation whose left side is a bare name (`x`, `y_1`, `f(x)`) stands for its right
 *   side; two general equations are equivalent when `lhs - rhs` agree up to sign;
 * - percentages: when exactly one side carries `%`, the answers are also compared with the sign removed,
 *   so `50\%` matches both `0.5` and `50` (questions ask "what percentage" and answers omit the sign);
 * - numbers compare with relative tolerance 1e-6; at random points an absolute 1e-9 is added, since values
 *   there are of order 1 and cancellation leaves noise such as `sin(x)^2 + cos(x)^2 - 1` ≈ 1e-16;
 * - identical text (ignoring whitespace) is equivalent, whether or not it parses;
 * - only arithmetic, a fixed list of functions and names are accepted from mathjs's parser: model text is
 *   untrusted, and mathjs would otherwise build matrices, units or strings on request.
 */
import {
  parse,
  simplify,
  isComplex,
  isConstantNode,
  isFunctionNode,
  isOperatorNode,
  isParenthesisNode,
  isSymbolNode,
  type MathNode,
} from 'mathjs';
import { seededRng } from '../lib/rng';
import { latexToMathjs } from './latex';

/** Longer answers are not answers; refusing them bounds the parsing and simplification work. */
const MAX_ANSWER_CHARS = 1000;
const RELATIVE_TOLERANCE = 1e-6;
const POINT_ABSOLUTE_TOLERANCE = 1e-9;
const SAMPLE_POINTS = 8;
const MIN_USABLE_POINTS = 3;

/** Names mathjs treats as constants; every other name is a free variable. */
const CONSTANTS = new Set(['pi', 'e', 'i', 'Infinity']);

const ALLOWED_FUNCTIONS = new Set([
  'sqrt',
  'nthRoot',
  'cbrt',
  'abs',
  'exp',
  'log',
  'log10',
  'log2',
  'sin',
  'cos',
  'tan',
  'sec',
  'csc',
  'cot',
  'asin',
  'acos',
  'atan',
  'sinh',
  'cosh',
  'tanh',
  'floor',
  'ceil',
  'combinations',
  'factorial',
]);

const ALLOWED_OPERATORS = new Set([
  'add',
  'subtract',
  'multiply',
  'divide',
  'pow',
  'unaryMinus',
  'unaryPlus',
  'factorial',
]);

/** A parsed answer: one value, or an equation kept as `lhs - rhs`. */
type Answer = { kind: 'value'; node: MathNode } | { kind: 'equation'; difference: MathNode };

interface Complexish {
  re: number;
  im: number;
}

/** Whether two answers are mathematically equal; false for anything that does not parse. Never throws. */
export function mathEquivalent(predicted: string, gold: string): boolean {
  return equivalentAllowingPercent(predicted, gold, false);
}

/** Like mathEquivalent, but both answers must be plain numbers (no free variables). */
export function numericallyEquivalent(predicted: string, gold: string): boolean {
  return equivalentAllowingPercent(predicted, gold, true);
}

/** Whether the text is a math answer this module can compare: a value, or an equation. */
export function isParsableMath(text: string): boolean {
  return safely(() => parseAnswer(text)) !== undefined;
}

/** The value of an answer that is a plain number (`42`, `1{,}000`, `\frac{84}{2}`), or undefined. */
export function numericValue(text: string): number | undefined {
  const answer = safely(() => parseAnswer(text));
  if (answer?.kind !== 'value' || freeVariables(answer.node).length > 0) return undefined;
  const value = evaluateAt(answer.node, {});
  return value !== undefined && value.im === 0 ? value.re : undefined;
}

function equivalentAllowingPercent(predicted: string, gold: string, numbersOnly: boolean): boolean {
  try {
    if (equivalent(predicted, gold, numbersOnly)) return true;
    if (hasPercent(predicted) === hasPercent(gold)) return false;
    return equivalent(withoutPercent(predicted), withoutPercent(gold), numbersOnly);
  } catch {
    return false;
  }
}

function hasPercent(text: string): boolean {
  return text.includes('%');
}

function withoutPercent(text: string): string {
  return text.replace(/\\?%/g, '');
}

function equivalent(predicted: string, gold: string, numbersOnly: boolean): boolean {
  if (predicted.length > MAX_ANSWER_CHARS || gold.length > MAX_ANSWER_CHARS) return false;
  // Identical text is equal even where it is not math (Math-Verify also compares strings first).
  if (!numbersOnly && squash(predicted) !== '' && squash(predicted) === squash(gold)) return true;
  const a = parseAnswer(predicted);
  const b = parseAnswer(gold);
  if (a === undefined || b === undefined || a.kind !== b.kind) return false;
  if (a.kind === 'value' && b.kind === 'value') return sameExpression(a.node, b.node, numbersOnly);
  if (a.kind === 'equation' && b.kind === 'equation' && !numbersOnly) {
    return (
      sameExpression(a.difference, b.difference, false) ||
      sameExpression(a.difference, negate(b.difference), false)
    );
  }
  return false;
}

function squash(text: string): string {
  return text.replace(/\s+/g, '');
}

function sameExpression(a: MathNode, b: MathNode, numbersOnly: boolean): boolean {
  const variables = [...new Set([...freeVariables(a), ...freeVariables(b)])].sort();
  if (variables.length === 0) {
    const x = evaluateAt(a, {});
    const y = evaluateAt(b, {});
    return x !== undefined && y !== undefined && close(x, y, 0);
  }
  if (numbersOnly) return false;
  const verdict = agreeAtRandomPoints(a, b, variables);
  return verdict ?? simplifiesToZero(a, b);
}

/**
 * Compares the two at seeded random points in [0.5, 2.5) (positive, so roots and logs stay real).
 * Undefined when fewer than MIN_USABLE_POINTS points evaluate on both sides.
 */
function agreeAtRandomPoints(a: MathNode, b: MathNode, variables: string[]): boolean | undefined {
  const rng = seededRng('math-equivalence', ...variables);
  const fa = a.compile();
  const fb = b.compile();
  let usable = 0;
  for (let point = 0; point < SAMPLE_POINTS; point++) {
    const scope = Object.fromEntries(variables.map((v) => [v, 0.5 + 2 * rng.next()]));
    const x = toComplexish(safely((): unknown => fa.evaluate(scope)));
    const y = toComplexish(safely((): unknown => fb.evaluate(scope)));
    if (x === undefined || y === undefined) continue;
    if (!close(x, y, POINT_ABSOLUTE_TOLERANCE)) return false;
    usable++;
  }
  return usable >= MIN_USABLE_POINTS ? true : undefined;
}

function simplifiesToZero(a: MathNode, b: MathNode): boolean {
  const difference = safely(() => simplify(parse(`(${a.toString()}) - (${b.toString()})`)));
  return difference !== undefined && isConstantNode(difference) && difference.value === 0;
}

function close(x: Complexish, y: Complexish, absolute: number): boolean {
  if (x.re === y.re && x.im === y.im) return true; // also equal infinities
  const distance = Math.hypot(x.re - y.re, x.im - y.im);
  const scale = Math.max(Math.hypot(x.re, x.im), Math.hypot(y.re, y.im));
  return Number.isFinite(distance) && distance <= RELATIVE_TOLERANCE * scale + absolute;
}

function evaluateAt(node: MathNode, scope: Record<string, number>): Complexish | undefined {
  return toComplexish(safely((): unknown => node.evaluate(scope)));
}

function toComplexish(value: unknown): Complexish | undefined {
  if (typeof value === 'number') return Number.isNaN(value) ? undefined : { re: value, im: 0 };
  if (isComplex(value)) {
    return Number.isFinite(value.re) && Number.isFinite(value.im)
      ? { re: value.re, im: value.im }
      : undefined;
  }
  return undefined;
}

function safely<T>(compute: () => T): T | undefined {
  try {
    return compute();
  } catch {
    return undefined;
  }
}

function parseAnswer(text: string): Answer | undefined {
  if (text.length > MAX_ANSWER_CHARS) return undefined;
  const sides = splitEquation(text);
  if (sides === undefined) return undefined;
  if (sides.length === 1) return valueOf(sides[0] as string);
  const [lhs, rhs] = sides as [string, string];
  if (isBareName(lhs)) return valueOf(rhs);
  const left = parseExpression(lhs);
  const right = parseExpression(rhs);
  if (left === undefined || right === undefined) return undefined;
  return { kind: 'equation', difference: parse(`(${left.toString()}) - (${right.toString()})`) };
}

function valueOf(text: string): Answer | undefined {
  const node = parseExpression(text);
  return node === undefined ? undefined : { kind: 'value', node };
}

/** The sides around a single `=` (not `==`, `<=`, `>=`, `!=`); undefined for several equals signs. */
function splitEquation(text: string): string[] | undefined {
  const positions = [...text.matchAll(/(?<![=<>!])=(?!=)/g)].map((m) => m.index);
  if (positions.length === 0) return [text];
  if (positions.length > 1) return undefined;
  const at = positions[0] as number;
  return [text.slice(0, at), text.slice(at + 1)];
}

/** `x`, `y_1`, `a_{n}`, `\theta`, `f(x)`: a left side that only names the answer. */
function isBareName(text: string): boolean {
  return /^\s*\$?\s*(?:[A-Za-z]|\\[A-Za-z]+)(?:_\{?\w+\}?)?\s*(?:\\left)?(?:\(\s*[A-Za-z](?:\s*,\s*[A-Za-z])*\s*(?:\\right)?\))?\s*$/.test(
    text,
  );
}

/** LaTeX first (it also reads `1,000` and `x(x+1)`), then mathjs's own syntax (`log(8, 2)`). */
function parseExpression(text: string): MathNode | undefined {
  const candidates = [() => latexToMathjs(text), () => text];
  for (const candidate of candidates) {
    const node = safely(() => parse(candidate()));
    if (node !== undefined && isAllowed(node)) return node;
  }
  return undefined;
}

function isAllowed(root: MathNode): boolean {
  return root
    .filter(() => true)
    .every((node) => {
      if (isConstantNode(node)) return typeof node.value === 'number';
      if (isSymbolNode(node) || isParenthesisNode(node)) return true;
      if (isOperatorNode(node)) return ALLOWED_OPERATORS.has(node.fn);
      if (isFunctionNode(node)) return isSymbolNode(node.fn) && ALLOWED_FUNCTIONS.has(node.fn.name);
      return false;
    });
}

function freeVariables(root: MathNode): string[] {
  const names = new Set<string>();
  root.traverse((node, path) => {
    if (isSymbolNode(node) && path !== 'fn' && !CONSTANTS.has(node.name)) names.add(node.name);
  });
  return [...names];
}

function negate(node: MathNode): MathNode {
  return parse(`-(${node.toString()})`);
}
