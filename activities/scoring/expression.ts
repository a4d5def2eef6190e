/**
 * A small expression tree for answers, parsed from the plain syntax that latexToMathjs prints (`((2 * x) +
 * 1)`, `sqrt(2)`, `(5)!`) or that a model writes (`2*x^2 + 3x`, `log(8, 2)`). Only arithmetic, a fixed list
 * of functions, numbers and names: model text is untrusted, and nothing here can build anything else. Number
 * literals keep their text, so they can be read exactly (BigInt) and a decimal's digits are known.
 */

export type Expr =
  | { op: 'num'; text: string }
  | { op: 'sym'; name: string }
  | { op: 'neg'; a: Expr }
  | { op: 'add' | 'sub' | 'mul' | 'div' | 'pow'; a: Expr; b: Expr }
  | { op: 'fact'; a: Expr }
  | { op: 'call'; fn: string; args: Expr[] };

class ExpressionError extends Error {
  override readonly name = 'ExpressionError';
}

/** Function names and how many arguments each takes. */
const FUNCTIONS: ReadonlyMap<string, readonly number[]> = new Map([
  ...[
    'sqrt',
    'cbrt',
    'abs',
    'exp',
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
    'factorial',
  ].map((f): [string, number[]] => [f, [1]]),
  ['log', [1, 2]],
  ['nthRoot', [2]],
  ['combinations', [2]],
]);

/** Names that are constants rather than free variables. */
const CONSTANTS = new Set(['pi', 'e', 'i', 'Infinity']);

/** Deeper nesting is not an answer; refusing it bounds the recursion. */
const MAX_DEPTH = 200;

type Token = { kind: 'num' | 'name' | 'sym'; text: string };

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  const pattern =
    /\s*(?:(\d+(?:\.\d*)?(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|(\*\*|[-+*/^!(),]))/y;
  let at = 0;
  while (at < source.length) {
    if (/^\s*$/.test(source.slice(at))) break;
    pattern.lastIndex = at;
    const m = pattern.exec(source);
    if (!m) throw new ExpressionError(`unexpected ${JSON.stringify(source.slice(at).trim()[0])}`);
    if (m[1] !== undefined) tokens.push({ kind: 'num', text: m[1] });
    else if (m[2] !== undefined) tokens.push({ kind: 'name', text: m[2] });
    else tokens.push({ kind: 'sym', text: m[3] === '**' ? '^' : (m[3] as string) });
    at = pattern.lastIndex;
  }
  return tokens;
}

/** Parses a whole expression; throws ExpressionError for anything else. */
export function parseExpression(source: string): Expr {
  const parser = new Parser(tokenize(source));
  const expr = parser.expression();
  parser.end();
  return expr;
}

class Parser {
  private pos = 0;
  private depth = 0;
  constructor(private readonly tokens: Token[]) {}

  end(): void {
    const t = this.tokens[this.pos];
    if (t !== undefined) throw new ExpressionError(`unexpected ${JSON.stringify(t.text)}`);
  }

  expression(): Expr {
    let left = this.term();
    for (let t = this.peek(); t === '+' || t === '-'; t = this.peek()) {
      this.pos++;
      left = { op: t === '+' ? 'add' : 'sub', a: left, b: this.term() };
    }
    return left;
  }

  private term(): Expr {
    let left = this.unary();
    for (;;) {
      const t = this.peek();
      if (t === '*' || t === '/') {
        this.pos++;
        left = { op: t === '*' ? 'mul' : 'div', a: left, b: this.unary() };
      } else if (this.startsFactor()) {
        left = { op: 'mul', a: left, b: this.power() };
      } else {
        return left;
      }
    }
  }

  private unary(): Expr {
    const t = this.peek();
    if (t === '-' || t === '+') {
      this.pos++;
      const operand = this.nested(() => this.unary());
      return t === '-' ? { op: 'neg', a: operand } : operand;
    }
    return this.power();
  }

  private power(): Expr {
    const base = this.postfix();
    if (this.peek() !== '^') return base;
    this.pos++;
    return { op: 'pow', a: base, b: this.nested(() => this.unary()) };
  }

  private postfix(): Expr {
    let value = this.nested(() => this.primary());
    while (this.peek() === '!') {
      this.pos++;
      value = { op: 'fact', a: value };
    }
    return value;
  }

  private primary(): Expr {
    const t = this.tokens[this.pos++];
    if (t === undefined) throw new ExpressionError('unexpected end of expression');
    if (t.kind === 'num') return { op: 'num', text: t.text };
    if (t.kind === 'name') {
      if (this.peek() === '(' && FUNCTIONS.has(t.text)) return this.call(t.text);
      return { op: 'sym', name: t.text };
    }
    if (t.text === '(') {
      const inner = this.expression();
      this.expect(')');
      return inner;
    }
    throw new ExpressionError(`unexpected ${JSON.stringify(t.text)}`);
  }

  private call(fn: string): Expr {
    this.expect('(');
    const args = [this.expression()];
    while (this.peek() === ',') {
      this.pos++;
      args.push(this.expression());
    }
    this.expect(')');
    if (!(FUNCTIONS.get(fn) ?? []).includes(args.length))
      throw new ExpressionError(`${fn} does not take ${args.length} arguments`);
    return { op: 'call', fn, args };
  }

  /** A number, name or `(` right after a factor multiplies it (`2x`, `3(x+1)`). */
  private startsFactor(): boolean {
    const t = this.tokens[this.pos];
    return t !== undefined && (t.kind !== 'sym' || t.text === '(');
  }

  private nested(parse: () => Expr): Expr {
    if (++this.depth > MAX_DEPTH) throw new ExpressionError('expression nested too deeply');
    const result = parse();
    this.depth--;
    return result;
  }

  private peek(): string | undefined {
    const t = this.tokens[this.pos];
    return t?.kind === 'sym' ? t.text : undefined;
  }

  private expect(text: string): void {
    const t = this.tokens[this.pos++];
    if (t?.kind !== 'sym' || t.text !== text)
      throw new ExpressionError(`expected ${JSON.stringify(text)}, got ${JSON.stringify(t?.text ?? 'end')}`);
  }
}

/** Every name the expression uses, constants included. */
function namesIn(expr: Expr, names = new Set<string>()): Set<string> {
  switch (expr.op) {
    case 'num':
      break;
    case 'sym':
      names.add(expr.name);
      break;
    case 'neg':
    case 'fact':
      namesIn(expr.a, names);
      break;
    case 'call':
      for (const arg of expr.args) namesIn(arg, names);
      break;
    default:
      namesIn(expr.a, names);
      namesIn(expr.b, names);
  }
  return names;
}

/** The free variables of an expression, sorted. */
export function freeVariables(expr: Expr): string[] {
  return [...namesIn(expr)].filter((name) => !CONSTANTS.has(name)).sort();
}

/** Whether the expression names the imaginary unit, so it is evaluated over the complex numbers. */
export function mentionsImaginaryUnit(expr: Expr): boolean {
  return namesIn(expr).has('i');
}
