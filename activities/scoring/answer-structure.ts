/**
 * A normalised answer (answer-text.ts) read into a small tree: a list, tuple or set of answers, an interval
 * or a union of them, a matrix, a relation (`x \le 5`, `2x + 4y = 3`, `-2 < x < 7`), a ratio, an expression,
 * or plain text. Reading is by splitting at top level (outside any bracket) in a fixed order, so `(1, 2)`
 * inside a list stays one item, and each leaf expression goes through latexToMathjs and parseExpression.
 *
 * Readings that are conventions rather than LaTeX:
 * - a bare comma list (`1, 2`, `1 and 2`, `{1, 2}`) is a set of solutions: its order does not matter,
 *   except against a tuple, which is compared in order;
 * - `(a, b)` is a pair that is also the open interval;
 * - `x = 5`, `f(x) = 5`, `\frac{AB}{CD} = 5`, `(p, q) = (3, 2)`: an equation whose side without numbers
 *   names the answer (a label) also stands for its other side, and a chain `x = 1 + 1 = 2` for its last;
 * - `x \le 5`, `-2 < x \le 7` and `1 \le |z| \le 2` also stand for the interval (or union) they describe;
 * - `a \pm b` is the list of both values; `x \approx 0.33` is its exact side;
 * - `204_5` is a number written in base 5.
 */
import { latexToMathjs } from './latex';
import { freeVariables, parseExpression, type Expr } from './expression';
import { plainText } from './answer-text';

export type Brackets =
  /** A bare list, grouping braces, or the values of `±`: unordered. */
  | 'none'
  /** `\{...\}`. */
  | 'set'
  /** `(a, b, c)` or `[a, b, c]`: ordered. */
  | 'tuple'
  /** `(a, b)`: a pair, or the open interval. */
  | 'pair';

export type RelationOp = '<' | '<=' | '>' | '>=' | '=' | '!=';

export interface Endpoint {
  expr: Expr;
  closed: boolean;
}

export interface DecimalLiteral {
  /** Digits after the decimal point. */
  places: number;
  significant: number;
}

export type Answer =
  | { kind: 'expr'; expr: Expr; decimal?: DecimalLiteral }
  | { kind: 'text'; text: string }
  | { kind: 'list'; items: Answer[]; brackets: Brackets }
  | { kind: 'interval'; lo: Endpoint; hi: Endpoint }
  | { kind: 'union'; parts: Answer[] }
  | { kind: 'matrix'; rows: Answer[][] }
  | {
      kind: 'relation';
      /** The chain's sides as expressions; undefined where a side is not one (`A:B`). */
      sides: Array<Expr | undefined>;
      ops: RelationOp[];
      /** For `label = value`: the label (spaces and braces dropped) and the value it names. */
      label?: string;
      value?: Answer;
      /** For an inequality on one label: the interval or union it describes. */
      set?: Answer;
    }
  | { kind: 'ratio'; terms: [Expr, Expr] };

/** Deeper structure than this is not an answer. */
const MAX_NESTING = 20;
const MAX_PLUS_MINUS = 3;
const MAX_ITEMS = 200;

const RELATION_TOKENS: ReadonlyMap<string, RelationOp> = new Map([
  ['<=', '<='],
  ['>=', '>='],
  ['!=', '!='],
  ['<', '<'],
  ['>', '>'],
  ['=', '='],
  ['≤', '<='],
  ['≥', '>='],
  ['≠', '!='],
  ['\\le', '<='],
  ['\\leq', '<='],
  ['\\leqslant', '<='],
  ['\\ge', '>='],
  ['\\geq', '>='],
  ['\\geqslant', '>='],
  ['\\lt', '<'],
  ['\\gt', '>'],
  ['\\neq', '!='],
  ['\\ne', '!='],
]);

/** Reads a normalised answer; undefined only for an empty one. */
export function readAnswer(normalized: string): Answer | undefined {
  return read(normalized, 0);
}

function read(source: string, depth: number): Answer | undefined {
  const s = source.trim();
  if (s === '' || depth > MAX_NESTING) return undefined;
  const next = (t: string): Answer | undefined => read(t, depth + 1);
  if (/^\\(?:text\w*|mathrm|mbox|operatorname)\s*\{[^{}]*\}$/.test(s))
    return { kind: 'text', text: plainText(s) };
  const matrix = readMatrix(s, next);
  if (matrix) return matrix;

  const approx = splitTopLevel(s, ['\\approx', '≈']);
  if (approx.parts.length > 1) {
    const [exact, rest] = [approx.parts[0] as string, approx.parts.slice(1)];
    return isLabel(exact) ? next(rest.join('\\approx')) : next(exact);
  }
  const groups = splitTopLevel(s, [';']);
  if (groups.parts.length > 1) return list(groups.parts, 'none', next);
  const grouped = readGroupedNumber(s);
  if (grouped) return grouped;
  const items = splitTopLevel(s, [',']);
  if (items.parts.length > 1) return list(items.parts, 'none', next);
  const union = splitTopLevel(s, ['\\cup', '∪']);
  if (union.parts.length > 1) {
    const parts = union.parts.map(next);
    return parts.every((p) => p !== undefined) ? { kind: 'union', parts } : text(s);
  }
  const member = splitTopLevel(s, ['\\in', '∈']);
  if (member.parts.length === 2 && isLabel(member.parts[0] as string)) return next(member.parts[1] as string);
  const relation = splitTopLevel(s, [...RELATION_TOKENS.keys()]);
  if (relation.parts.length > 1) return readRelation(relation.parts, relation.found, next);
  const bracketed = readBracketed(s, next);
  if (bracketed) return bracketed;
  const plusMinus = readPlusMinus(s, next);
  if (plusMinus) return plusMinus;
  const ratio = splitTopLevel(s, [':']);
  if (ratio.parts.length === 2) {
    const [a, b] = ratio.parts.map(expressionOf);
    if (a && b) return { kind: 'ratio', terms: [a, b] };
  }
  return readNumberInBase(s) ?? readExpression(s) ?? text(s);
}

function text(s: string): Answer {
  return { kind: 'text', text: plainText(s) };
}

function list(
  parts: string[],
  brackets: Brackets,
  next: (t: string) => Answer | undefined,
): Answer | undefined {
  if (parts.length > MAX_ITEMS) return undefined;
  const items: Answer[] = [];
  for (const part of parts) {
    const item = next(part);
    if (item === undefined) continue;
    // The values of `a \pm b` are items of the list they stand in.
    if (item.kind === 'list' && item.brackets === 'none' && isPlusMinusList(part)) items.push(...item.items);
    else items.push(item);
  }
  if (items.length === 0) return undefined;
  if (items.length === 1 && brackets === 'none') return items[0];
  return { kind: 'list', items, brackets };
}

const PLUS_MINUS = /\\pm(?![A-Za-z])|\\mp(?![A-Za-z])|±|∓/;

function isPlusMinusList(part: string): boolean {
  return PLUS_MINUS.test(part) && splitTopLevel(part, [',', ';']).parts.length === 1;
}

/** `a \pm b` → the list of `a + b` and `a - b`; `\mp` the other way round. */
function readPlusMinus(s: string, next: (t: string) => Answer | undefined): Answer | undefined {
  const m = PLUS_MINUS.exec(s);
  if (!m) return undefined;
  if ((s.match(new RegExp(PLUS_MINUS.source, 'g')) ?? []).length > MAX_PLUS_MINUS) return text(s);
  const minusFirst = m[0] === '\\mp' || m[0] === '∓';
  const at = m.index;
  const variant = (sign: string): string => `${s.slice(0, at)}${sign}${s.slice(at + m[0].length)}`;
  const values = [variant(minusFirst ? '-' : '+'), variant(minusFirst ? '+' : '-')].map(next);
  if (values.some((v) => v === undefined)) return text(s);
  const items = (values as Answer[]).flatMap((v) =>
    v.kind === 'list' && v.brackets === 'none' ? v.items : [v],
  );
  return { kind: 'list', items, brackets: 'none' };
}

/** `7,425,000`, `1 000`, `1,000.5`: one number with thousands separators, not a list. */
function readGroupedNumber(s: string): Answer | undefined {
  if (!/^[-+]?\d{1,3}(?:(?:,\d{3})+|(?: \d{3})+)(?:\.\d+)?$/.test(s)) return undefined;
  return readExpression(s.replace(/[, ]/g, ''));
}

function readBracketed(s: string, next: (t: string) => Answer | undefined): Answer | undefined {
  const enclosed = enclosingBrackets(s);
  if (!enclosed) return undefined;
  const { open, close, inner } = enclosed;
  const parts = splitTopLevel(inner, [',', ';']).parts;
  if (open === '\\{') return list(parts, 'set', next) ?? { kind: 'list', items: [], brackets: 'set' };
  if (parts.length === 1) return next(inner);
  if (open === '{') return list(parts, 'none', next);
  if (parts.length === 2 && (open === '[' || close === ']')) {
    const [lo, hi] = parts.map(expressionOf);
    if (lo && hi)
      return {
        kind: 'interval',
        lo: { expr: lo, closed: open === '[' },
        hi: { expr: hi, closed: close === ']' },
      };
  }
  return list(parts, parts.length === 2 && open === '(' && close === ')' ? 'pair' : 'tuple', next);
}

function readMatrix(s: string, next: (t: string) => Answer | undefined): Answer | undefined {
  const m = /^[([]?\s*\\begin\{([a-zA-Z]*matrix|array)\}(?:\{[^{}]*\})?([\s\S]*)\\end\{\1\}\s*[)\]]?$/.exec(
    s,
  );
  if (!m) return undefined;
  const rows = splitTopLevel(m[2] as string, ['\\\\'])
    .parts.filter((row) => row.trim() !== '')
    .map((row) => splitTopLevel(row, ['&']).parts.map((cell) => next(cell) ?? text(cell)));
  const width = rows[0]?.length ?? 0;
  if (rows.length === 0 || rows.length > MAX_ITEMS || rows.some((r) => r.length !== width)) return text(s);
  return { kind: 'matrix', rows };
}

function readRelation(parts: string[], found: string[], next: (t: string) => Answer | undefined): Answer {
  const ops = found.map((t) => RELATION_TOKENS.get(t) as RelationOp);
  const sides = parts.map(expressionOf);
  const relation: Answer & { kind: 'relation' } = { kind: 'relation', sides, ops };
  const first = parts[0] as string;
  const last = parts[parts.length - 1] as string;
  if (ops.every((op) => op === '=')) {
    if (isLabel(first)) Object.assign(relation, { label: labelKey(first), value: next(last) });
    else if (parts.length === 2 && isLabel(last))
      Object.assign(relation, { label: labelKey(last), value: next(first) });
    else if (sides.every((e) => e !== undefined && freeVariables(e).length === 0))
      relation.value = next(last);
    return relation;
  }
  const set = describedSet(parts, ops, sides);
  if (set) relation.set = set;
  return relation;
}

const INFINITY: Expr = { op: 'sym', name: 'Infinity' };
const MINUS_INFINITY: Expr = { op: 'neg', a: INFINITY };
const isUpper = (op: RelationOp): boolean => op === '<' || op === '<=';
const isLower = (op: RelationOp): boolean => op === '>' || op === '>=';

/** `x < 3` → (−∞, 3); `5 \ge x` → (−∞, 5]; `-2 \le x < 7` → [−2, 7); `1 \le |z| \le 2` → [−2, −1] ∪ [1, 2]. */
function describedSet(
  parts: string[],
  ops: RelationOp[],
  sides: Array<Expr | undefined>,
): Answer | undefined {
  const constant = (e: Expr | undefined): e is Expr => e !== undefined && freeVariables(e).length === 0;
  if (ops.length === 1) {
    let [op, name, bound] = [ops[0] as RelationOp, parts[0] as string, sides[1]];
    if (!isLabel(name)) {
      [name, bound] = [parts[1] as string, sides[0]];
      op = flip(op);
    }
    if (!isLabel(name) || !constant(bound) || op === '=' || op === '!=') return undefined;
    return isUpper(op)
      ? {
          kind: 'interval',
          lo: { expr: MINUS_INFINITY, closed: false },
          hi: { expr: bound, closed: op === '<=' },
        }
      : { kind: 'interval', lo: { expr: bound, closed: op === '>=' }, hi: { expr: INFINITY, closed: false } };
  }
  if (ops.length !== 2) return undefined;
  const [op1, op2] = ops as [RelationOp, RelationOp];
  const middle = (parts[1] as string).trim();
  const [a, b] = [sides[0], sides[2]];
  if (!constant(a) || !constant(b)) return undefined;
  let lo: Endpoint;
  let hi: Endpoint;
  if (isUpper(op1) && isUpper(op2))
    [lo, hi] = [
      { expr: a, closed: op1 === '<=' },
      { expr: b, closed: op2 === '<=' },
    ];
  else if (isLower(op1) && isLower(op2))
    [lo, hi] = [
      { expr: b, closed: op2 === '>=' },
      { expr: a, closed: op1 === '>=' },
    ];
  else return undefined;
  const absolute = /^\|(.+)\|$/.exec(middle);
  if (absolute && isLabel(absolute[1] as string)) return absoluteValueSet(lo, hi);
  return isLabel(middle) ? { kind: 'interval', lo, hi } : undefined;
}

/** lo ≤ |z| ≤ hi: [−hi, −lo] ∪ [lo, hi] when lo > 0, else the one interval [−hi, hi]. */
function absoluteValueSet(lo: Endpoint, hi: Endpoint): Answer {
  const negHi: Endpoint = { expr: { op: 'neg', a: hi.expr }, closed: hi.closed };
  const low = exactSign(lo.expr);
  if (low === undefined || low <= 0) return { kind: 'interval', lo: negHi, hi };
  const negLo: Endpoint = { expr: { op: 'neg', a: lo.expr }, closed: lo.closed };
  return {
    kind: 'union',
    parts: [
      { kind: 'interval', lo: negHi, hi: negLo },
      { kind: 'interval', lo, hi },
    ],
  };
}

function exactSign(e: Expr): number | undefined {
  if (e.op === 'num') return Math.sign(Number(e.text));
  if (e.op === 'neg') {
    const s = exactSign(e.a);
    return s === undefined ? undefined : -s;
  }
  if (e.op === 'div' || e.op === 'mul') {
    const [a, b] = [exactSign(e.a), exactSign(e.b)];
    return a === undefined || b === undefined ? undefined : a * b;
  }
  return undefined;
}

function flip(op: RelationOp): RelationOp {
  const flipped: Record<RelationOp, RelationOp> = {
    '<': '>',
    '<=': '>=',
    '>': '<',
    '>=': '<=',
    '=': '=',
    '!=': '!=',
  };
  return flipped[op];
}

/**
 * A side that names rather than computes: letters, names with subscripts (`a_{37}`, `V_1`), function
 * notation `f(x)`, `|AB|`, `A:B`, `\frac{NO}{BO}`, `(p, q)`, and no numbers or arithmetic signs.
 */
function isLabel(side: string): boolean {
  const t = side.replace(/_\{[^{}]*\}|_[A-Za-z0-9]/g, '').replace(/\s/g, '');
  return /[A-Za-z]/.test(t) && /^[A-Za-z\\{}()|:,'/^]*$/.test(t) && !/\\(?:infty|pi)(?![A-Za-z])/.test(t);
}

function labelKey(side: string): string {
  return side.replace(/[\s{}]/g, '');
}

/** `204_5` → 54; a digit the base does not have makes it text. */
function readNumberInBase(s: string): Answer | undefined {
  const m = /^([0-9A-Za-z]+)_\{?(\d{1,2})\}?$/.exec(s);
  if (!m) return undefined;
  const base = Number(m[2]);
  const digits = (m[1] as string).toLowerCase();
  if (base < 2 || base > 36 || digits.length > 200) return undefined;
  let value = 0n;
  for (const d of digits) {
    const v = parseInt(d, 36);
    if (!(v < base)) return text(s);
    value = value * BigInt(base) + BigInt(v);
  }
  return { kind: 'expr', expr: { op: 'num', text: value.toString() } };
}

function readExpression(s: string): Answer | undefined {
  const expr = expressionOf(s);
  if (!expr) return undefined;
  const decimal = /^[-+]?(?:\d+\.\d*|\.\d+)$/.exec(s);
  if (!decimal) return { kind: 'expr', expr };
  const [whole = '', fraction = ''] = s.replace(/^[-+]/, '').split('.');
  const significant = `${whole}${fraction}`.replace(/^0+/, '').length;
  return { kind: 'expr', expr, decimal: { places: fraction.length, significant } };
}

/** LaTeX first, then the plain syntax (`log(8, 2)`, `x^2 + 2*x`). */
function expressionOf(text: string): Expr | undefined {
  for (const source of [() => latexToMathjs(text), () => text]) {
    try {
      return parseExpression(source());
    } catch {
      // try the next reading
    }
  }
  return undefined;
}

const OPENERS = new Set(['(', '[', '{', '\\{']);
const CLOSERS = new Set([')', ']', '}', '\\}']);

/** The brackets around the whole text, if the first one closes at the very end (`(a, b]` counts). */
function enclosingBrackets(s: string): { open: string; close: string; inner: string } | undefined {
  const open = s.startsWith('\\{') ? '\\{' : s[0];
  if (open === undefined || !OPENERS.has(open)) return undefined;
  let depth = 0;
  for (const { token, at } of scan(s)) {
    if (OPENERS.has(token)) depth++;
    else if (CLOSERS.has(token)) {
      depth--;
      if (depth === 0) {
        return at + token.length === s.length
          ? { open, close: token, inner: s.slice(open.length, at) }
          : undefined;
      }
    }
  }
  return undefined;
}

/** The text's tokens with their offsets: a command (`\frac`, `\{`, `\\`), or one character. */
function* scan(s: string): Generator<{ token: string; at: number }> {
  let i = 0;
  while (i < s.length) {
    let end = i + 1;
    if (s[i] === '\\') {
      end = i + 2;
      if (/[A-Za-z]/.test(s[i + 1] ?? '')) while (end < s.length && /[A-Za-z]/.test(s[end] as string)) end++;
    } else if (s.startsWith('<=', i) || s.startsWith('>=', i) || s.startsWith('!=', i)) {
      end = i + 2;
    }
    yield { token: s.slice(i, end), at: i };
    i = end;
  }
}

/** Splits at the given tokens where they stand outside every bracket; `found` lists the ones split at. */
function splitTopLevel(s: string, tokens: readonly string[]): { parts: string[]; found: string[] } {
  const wanted = new Set(tokens);
  const parts: string[] = [];
  const found: string[] = [];
  let depth = 0;
  let from = 0;
  for (const { token, at } of scan(s)) {
    if (OPENERS.has(token)) depth++;
    else if (CLOSERS.has(token)) depth = Math.max(0, depth - 1);
    else if (depth === 0 && wanted.has(token)) {
      parts.push(s.slice(from, at));
      found.push(token);
      from = at + token.length;
    }
  }
  parts.push(s.slice(from));
  return { parts: parts.map((p) => p.trim()), found };
}
