/**
 * A translator from the LaTeX that models put in `\boxed{}` answers into a mathjs expression string, so that
 * answers can be compared with real algebra instead of string matching. It tokenizes, then parses by
 * recursive descent and prints every operation with explicit parentheses.
 *
 * Choices that go beyond LaTeX's own rules (they follow what writers of answers mean):
 * - an unbraced superscript or subscript takes the whole next number (`2^10` is 1024, not 2^1·0);
 * - an integer written right before a fraction of integers is a mixed number (`3\frac{1}{2}` is 3.5);
 * - `1,000`, `1{,}000` and `1\,000` are thousands separators when every group after the first has 3 digits;
 * - `\%` and `%` divide by 100; degree marks (`^\circ`, `\degree`, `°`) are dropped;
 * - a trailing `\text{...}`/`\mathrm{...}` tail is unit text and is dropped (`5\text{ cm}` is 5);
 * - `\ln` and `\log` are natural logarithms, `\log_b` has base b;
 * - a run of letters is a product of single-letter variables unless it starts with a known function name.
 */

import { matchingBrace } from './boxed';

export class LatexParseError extends Error {
  override readonly name = 'LatexParseError';
}

type Token =
  | { kind: 'number'; text: string }
  | { kind: 'letters'; text: string }
  | { kind: 'command'; name: string }
  /** The raw content of `\text{...}`-like groups: units, or words the parser resolves later. */
  | { kind: 'text'; content: string }
  | { kind: 'symbol'; text: string };

/** Commands that only change spacing or delimiter size, and the currency sign. */
const IGNORED_COMMANDS = new Set([
  '$',
  ',',
  ';',
  ':',
  '!',
  ' ',
  'quad',
  'qquad',
  'displaystyle',
  'textstyle',
  'left',
  'right',
  'big',
  'Big',
  'bigg',
  'Bigg',
  'bigl',
  'bigr',
  'Bigl',
  'Bigr',
  'biggl',
  'biggr',
]);

/** Commands whose braced argument is plain text (units, words, operator names). */
const TEXT_COMMANDS = new Set([
  'text',
  'textrm',
  'textbf',
  'textit',
  'textsf',
  'texttt',
  'textnormal',
  'mbox',
  'mathrm',
  'operatorname',
]);

/** Commands whose braced argument is math in another font. */
const FONT_COMMANDS = new Set(['mathbf', 'mathit', 'mathsf', 'mathnormal', 'boldsymbol', 'bm']);

const FRACTION_COMMANDS = new Set(['frac', 'dfrac', 'tfrac', 'cfrac']);
const BINOMIAL_COMMANDS = new Set(['binom', 'dbinom', 'tbinom']);

/** LaTeX function commands and the mathjs function each becomes. */
const FUNCTION_COMMANDS: ReadonlyMap<string, string> = new Map([
  ['sin', 'sin'],
  ['cos', 'cos'],
  ['tan', 'tan'],
  ['sec', 'sec'],
  ['csc', 'csc'],
  ['cot', 'cot'],
  ['sinh', 'sinh'],
  ['cosh', 'cosh'],
  ['tanh', 'tanh'],
  ['arcsin', 'asin'],
  ['arccos', 'acos'],
  ['arctan', 'atan'],
  ['ln', 'log'],
  ['log', 'log'],
  ['lg', 'log10'],
  ['exp', 'exp'],
]);

/** Function names recognised at the start of a plain run of letters (`sqrt(2)`, `sinx`). */
const WORD_FUNCTIONS: ReadonlyMap<string, string> = new Map([
  ...FUNCTION_COMMANDS,
  ['asin', 'asin'],
  ['acos', 'acos'],
  ['atan', 'atan'],
  ['sqrt', 'sqrt'],
  ['abs', 'abs'],
]);
/** Longest first, so `sinh` wins over `sin`. */
const WORD_FUNCTION_NAMES = [...WORD_FUNCTIONS.keys()].sort((a, b) => b.length - a.length);

const INVERTIBLE = new Set(['sin', 'cos', 'tan']);

const GREEK_LETTERS = new Set([
  'alpha',
  'beta',
  'gamma',
  'delta',
  'epsilon',
  'varepsilon',
  'zeta',
  'eta',
  'theta',
  'vartheta',
  'iota',
  'kappa',
  'lambda',
  'mu',
  'nu',
  'xi',
  'rho',
  'sigma',
  'tau',
  'upsilon',
  'phi',
  'varphi',
  'chi',
  'psi',
  'omega',
  'Gamma',
  'Delta',
  'Theta',
  'Lambda',
  'Xi',
  'Pi',
  'Sigma',
  'Upsilon',
  'Phi',
  'Psi',
  'Omega',
]);

const CONSTANT_COMMANDS: ReadonlyMap<string, string> = new Map([
  ['pi', 'pi'],
  ['infty', 'Infinity'],
]);

const OPERATOR_COMMANDS: ReadonlyMap<string, string> = new Map([
  ['cdot', '*'],
  ['times', '*'],
  ['ast', '*'],
  ['div', '/'],
]);

const DELIMITER_COMMANDS: ReadonlyMap<string, string> = new Map([
  ['lvert', '|'],
  ['rvert', '|'],
  ['vert', '|'],
  ['mid', '|'],
]);

/** Opening command → [closing command, mathjs function]. */
const BRACKET_FUNCTIONS: ReadonlyMap<string, [string, string]> = new Map([
  ['lfloor', ['rfloor', 'floor']],
  ['lceil', ['rceil', 'ceil']],
]);

const UNICODE_SYMBOLS: ReadonlyMap<string, Token> = new Map<string, Token>([
  ['×', { kind: 'symbol', text: '*' }],
  ['·', { kind: 'symbol', text: '*' }],
  ['⋅', { kind: 'symbol', text: '*' }],
  ['÷', { kind: 'symbol', text: '/' }],
  ['−', { kind: 'symbol', text: '-' }],
  ['–', { kind: 'symbol', text: '-' }],
  ['π', { kind: 'command', name: 'pi' }],
  ['∞', { kind: 'command', name: 'infty' }],
  ['√', { kind: 'command', name: 'sqrt' }],
]);

const SYMBOLS = new Set([
  '+',
  '-',
  '*',
  '/',
  '^',
  '_',
  '(',
  ')',
  '[',
  ']',
  '{',
  '}',
  '|',
  '!',
  '%',
  ',',
  '=',
  "'",
]);

/** Deeper nesting than this is not an answer; refusing it keeps the recursion bounded. */
const MAX_DEPTH = 100;

/** Translate a LaTeX (or plain) answer into a mathjs expression string; throws LatexParseError. */
export function latexToMathjs(latex: string): string {
  const source = stripDelimiters(dropDegreeMarks(latex));
  if (source === '') throw new LatexParseError('empty expression');
  const tokens = expandTextTokens(dropUnitTail(tokenize(source)));
  return new Parser(tokens).parseAll();
}

function dropDegreeMarks(latex: string): string {
  return latex.replace(/\^\s*(?:\{\s*\\circ\s*\}|\\circ)/g, '').replace(/\\degree|°/g, '');
}

/** Math-mode delimiters (`$...$`, `\(...\)`, `\[...\]`) and a sentence-final period are not part of it. */
function stripDelimiters(latex: string): string {
  let s = latex.trim();
  for (;;) {
    const before = s;
    s = s.replace(/^\$+|\$+$/g, '').trim();
    s = s.replace(/^\\[([]|\\[)\]]$/g, '').trim();
    s = s.replace(/\.$/, '').trim();
    if (s === before) return s;
  }
}

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i] as string;
    if (/\s/.test(c) || c === '$' || c === '~') {
      i++;
    } else if (isDigit(c) || (c === '.' && isDigit(source[i + 1]))) {
      const [text, end] = readNumber(source, i);
      tokens.push({ kind: 'number', text });
      i = end;
    } else if (isLetter(c)) {
      let end = i;
      while (end < source.length && isLetter(source[end])) end++;
      tokens.push({ kind: 'letters', text: source.slice(i, end) });
      i = end;
    } else if (c === '\\') {
      i = readCommand(source, i, tokens);
    } else if (UNICODE_SYMBOLS.has(c)) {
      tokens.push(UNICODE_SYMBOLS.get(c) as Token);
      i++;
    } else if (SYMBOLS.has(c)) {
      tokens.push({ kind: 'symbol', text: c });
      i++;
    } else {
      throw new LatexParseError(`unexpected character ${JSON.stringify(c)}`);
    }
  }
  return tokens;
}

/** Reads the command at `start` (a backslash), pushing what it stands for; returns the next index. */
function readCommand(source: string, start: number, tokens: Token[]): number {
  let end = start + 1;
  if (isLetter(source[end])) {
    while (end < source.length && isLetter(source[end])) end++;
  } else {
    end++;
  }
  const name = source.slice(start + 1, end);
  if (name === '') throw new LatexParseError('dangling backslash');
  if (IGNORED_COMMANDS.has(name)) {
    // `\left.` and `\right.` are invisible delimiters.
    if ((name === 'left' || name === 'right') && source[end] === '.') end++;
    return end;
  }
  if (name === '%') {
    tokens.push({ kind: 'symbol', text: '%' });
    return end;
  }
  if (DELIMITER_COMMANDS.has(name)) {
    tokens.push({ kind: 'symbol', text: DELIMITER_COMMANDS.get(name) as string });
    return end;
  }
  if (TEXT_COMMANDS.has(name) || FONT_COMMANDS.has(name)) {
    const open = skipSpaces(source, end);
    if (source[open] !== '{') throw new LatexParseError(`\\${name} without a braced argument`);
    const close = closingBrace(source, open);
    const content = source.slice(open + 1, close);
    if (TEXT_COMMANDS.has(name)) {
      tokens.push({ kind: 'text', content });
    } else {
      tokens.push({ kind: 'symbol', text: '{' }, ...tokenize(content), { kind: 'symbol', text: '}' });
    }
    return close + 1;
  }
  tokens.push({ kind: 'command', name });
  return end;
}

/**
 * A number: digits, thousands groups (`,`, `{,}` or `\,` followed by exactly three digits), a decimal part
 * and a scientific exponent (`6.02e23`). Returns the digits without separators and the next index.
 */
function readNumber(source: string, start: number): [string, number] {
  let i = start;
  let text = '';
  while (isDigit(source[i])) text += source[i++];
  if (text.length > 0 && text.length <= 3) {
    for (;;) {
      const separator = ['{,}', '\\,', ','].find((s) => source.startsWith(s, i));
      if (separator === undefined) break;
      const group = source.slice(i + separator.length, i + separator.length + 3);
      if (!/^\d{3}$/.test(group) || isDigit(source[i + separator.length + 3])) break;
      text += group;
      i += separator.length + 3;
    }
  }
  if (source[i] === '.' && isDigit(source[i + 1])) {
    text += '.';
    i++;
    while (isDigit(source[i])) text += source[i++];
  }
  const exponent = /^[eE][+-]?\d+/.exec(source.slice(i));
  if (exponent !== null && !isLetter(source[i + exponent[0].length])) {
    text += exponent[0].toLowerCase();
    i += exponent[0].length;
  }
  return [text.startsWith('.') ? `0${text}` : text, i];
}

/**
 * Drops a unit tail: the first text group of the trailing run of unit-like tokens (text, numbers, `^`,
 * `*`, `/`, braces), with the operators just before it, when something comes before it (`5\text{ cm}^2`,
 * `3\times\text{m}/\text{s}`).
 */
function dropUnitTail(tokens: Token[]): Token[] {
  let start = tokens.length;
  while (start > 0 && isUnitLike(tokens[start - 1] as Token)) start--;
  let textAt = start;
  while (textAt < tokens.length && tokens[textAt]?.kind !== 'text') textAt++;
  if (textAt === tokens.length) return tokens;
  let cut = textAt;
  while (cut > 0 && isMultiplicative(tokens[cut - 1] as Token)) cut--;
  const before = tokens.slice(0, cut);
  return before.some((t) => t.kind !== 'text') ? before : tokens;
}

function isUnitLike(token: Token): boolean {
  if (token.kind === 'text' || token.kind === 'number') return true;
  if (token.kind === 'symbol') return ['^', '{', '}', '/', '*'].includes(token.text);
  return token.kind === 'command' && OPERATOR_COMMANDS.has(token.name);
}

function isMultiplicative(token: Token): boolean {
  if (token.kind === 'symbol') return token.text === '*' || token.text === '/';
  return token.kind === 'command' && OPERATOR_COMMANDS.has(token.name);
}

/** Text groups that are not a unit tail are read as math, e.g. `\mathrm{e}` or `\operatorname{sin}`. */
function expandTextTokens(tokens: Token[]): Token[] {
  return tokens.flatMap((t): Token[] => {
    if (t.kind !== 'text') return [t];
    const inner = tokenize(t.content);
    return inner.length === 0 ? [] : [{ kind: 'symbol', text: '{' }, ...inner, { kind: 'symbol', text: '}' }];
  });
}

class Parser {
  private pos = 0;
  private depth = 0;
  /** How many `|...|` groups are open: inside one, a `|` closes it instead of starting a factor. */
  private absDepth = 0;

  constructor(private readonly tokens: Token[]) {}

  parseAll(): string {
    const result = this.parseExpression();
    const rest = this.peek();
    if (rest !== undefined) throw new LatexParseError(`unexpected ${describe(rest)}`);
    return result;
  }

  private parseExpression(): string {
    let left = this.parseTerm();
    for (;;) {
      const op = this.peekSymbol();
      if (op !== '+' && op !== '-') return left;
      this.pos++;
      left = `(${left} ${op} ${this.parseTerm()})`;
    }
  }

  private parseTerm(): string {
    let left = this.parseUnary();
    for (;;) {
      const op = this.multiplicativeOperator();
      if (op !== undefined) {
        this.pos++;
        left = `(${left} ${op} ${this.parseUnary()})`;
      } else if (this.startsImplicitFactor()) {
        left = `(${left} * ${this.parseUnary()})`;
      } else {
        return left;
      }
    }
  }

  private parseUnary(): string {
    const op = this.peekSymbol();
    if (op === '-' || op === '+') {
      this.pos++;
      const operand = this.nested(() => this.parseUnary());
      return op === '-' ? `(-${operand})` : operand;
    }
    return this.parsePower();
  }

  private parsePower(): string {
    const base = this.parsePostfix();
    if (this.peekSymbol() !== '^') return base;
    this.pos++;
    const exponent = this.parseExponent();
    if (this.peekSymbol() === '^') throw new LatexParseError('double superscript');
    return `(${base} ^ ${exponent})`;
  }

  /** A braced group, or a signed single factor (`x^-1`, `2^10`, `e^x`). */
  private parseExponent(): string {
    const op = this.peekSymbol();
    if (op === '-' || op === '+') {
      this.pos++;
      const operand = this.parsePostfix();
      return op === '-' ? `(-${operand})` : operand;
    }
    return this.parsePostfix();
  }

  private parsePostfix(): string {
    let value = this.parsePrimary();
    for (;;) {
      const op = this.peekSymbol();
      if (op === '!') {
        this.pos++;
        value = `(${value})!`;
      } else if (op === '%') {
        this.pos++;
        value = `(${value} / 100)`;
      } else if (op === '_') {
        // A subscript on something that is not a name (`10_2`, `(x)_n`) carries no value: drop it.
        this.pos++;
        this.parseSubscriptName();
      } else {
        return value;
      }
    }
  }

  /** Every recursive path passes through here or parseUnary, so this bounds the depth. */
  private nested(parse: () => string): string {
    if (++this.depth > MAX_DEPTH) throw new LatexParseError('expression nested too deeply');
    const result = parse();
    this.depth--;
    return result;
  }

  private parsePrimary(): string {
    return this.nested(() => this.parseToken(this.next()));
  }

  private parseToken(token: Token): string {
    switch (token.kind) {
      case 'number':
        return this.parseNumber(token.text);
      case 'letters':
        return this.parseLetters(token.text);
      case 'command':
        return this.parseCommand(token.name);
      case 'symbol':
        return this.parseBracketed(token.text);
      case 'text':
        throw new LatexParseError('unexpected text');
    }
  }

  private parseNumber(text: string): string {
    const fraction = this.integerFractionAhead();
    if (/^\d+$/.test(text) && fraction !== undefined && this.startsTerm(this.pos - 1)) {
      this.pos += 7;
      return `(${text} + ${fraction})`;
    }
    return text;
  }

  /** Whether the token at `index` opens a term, i.e. nothing multiplies it from the left. */
  private startsTerm(index: number): boolean {
    const before = this.tokens[index - 1];
    return (
      before === undefined || (before.kind === 'symbol' && ['+', '-', '(', '[', '{'].includes(before.text))
    );
  }

  /** `\frac{int}{int}` at the current position, printed, for mixed numbers. */
  private integerFractionAhead(): string | undefined {
    const t = this.tokens.slice(this.pos, this.pos + 7);
    const [frac, open1, num, close1, open2, den, close2] = t;
    const isSymbol = (x: Token | undefined, s: string): boolean => x?.kind === 'symbol' && x.text === s;
    const isInteger = (x: Token | undefined): x is { kind: 'number'; text: string } =>
      x?.kind === 'number' && /^\d+$/.test(x.text);
    if (frac?.kind !== 'command' || !FRACTION_COMMANDS.has(frac.name)) return undefined;
    if (!isSymbol(open1, '{') || !isSymbol(close1, '}') || !isSymbol(open2, '{') || !isSymbol(close2, '}')) {
      return undefined;
    }
    return isInteger(num) && isInteger(den) ? `(${num.text} / ${den.text})` : undefined;
  }

  /** A run of letters: a function word at its start, else its first letter as a variable. */
  private parseLetters(text: string): string {
    if (text === 'pi') return 'pi';
    const word = WORD_FUNCTION_NAMES.find((w) => text.startsWith(w));
    if (word !== undefined) {
      this.pushBack(text.slice(word.length));
      return this.parseFunction(WORD_FUNCTIONS.get(word) as string);
    }
    this.pushBack(text.slice(1));
    return this.withSubscript(text.slice(0, 1));
  }

  private parseCommand(name: string): string {
    if (FRACTION_COMMANDS.has(name)) {
      const numerator = this.parseArgument();
      return `(${numerator} / ${this.parseArgument()})`;
    }
    if (BINOMIAL_COMMANDS.has(name)) {
      const n = this.parseArgument();
      return `combinations(${n}, ${this.parseArgument()})`;
    }
    if (name === 'sqrt') return this.parseSqrt();
    const fn = FUNCTION_COMMANDS.get(name);
    if (fn !== undefined) return this.parseFunction(fn);
    const constant = CONSTANT_COMMANDS.get(name);
    if (constant !== undefined) return constant;
    if (GREEK_LETTERS.has(name)) return this.withSubscript(name);
    const bracket = BRACKET_FUNCTIONS.get(name);
    if (bracket !== undefined) {
      const inner = this.parseExpression();
      this.expectCommand(bracket[0]);
      return `${bracket[1]}(${inner})`;
    }
    throw new LatexParseError(`unsupported command \\${name}`);
  }

  private parseSqrt(): string {
    if (this.peekSymbol() === '[') {
      this.pos++;
      const index = this.parseExpression();
      this.expectSymbol(']');
      return `nthRoot(${this.parseArgument()}, ${index})`;
    }
    return `sqrt(${this.parseArgument()})`;
  }

  /**
   * A function application: optional power (`\sin^2 x`, `\sin^{-1} x` for the inverse), optional base
   * (`\log_2 8`), then a bracketed argument or, as in `\sin 2x`, the product of factors up to the next
   * operator or function.
   */
  private parseFunction(fn: string): string {
    let power: string | undefined;
    let name = fn;
    if (this.peekSymbol() === '^') {
      this.pos++;
      power = this.parseExponent();
      if (power.replace(/[()\s]/g, '') === '-1' && INVERTIBLE.has(fn)) {
        name = `a${fn}`;
        power = undefined;
      }
    }
    let base: string | undefined;
    if (this.peekSymbol() === '_') {
      if (fn !== 'log') throw new LatexParseError(`subscript on ${fn}`);
      this.pos++;
      base = this.parseArgument();
    }
    const argument = this.parseFunctionArgument();
    const applied = base === undefined ? `${name}(${argument})` : `log(${argument}, ${base})`;
    return power === undefined ? applied : `(${applied} ^ ${power})`;
  }

  private parseFunctionArgument(): string {
    const open = this.peekSymbol();
    if (open === '(' || open === '[' || open === '{') return this.parsePostfix();
    let argument = this.parsePower();
    while (this.startsImplicitFactor() && !this.functionAhead()) {
      argument = `(${argument} * ${this.parsePower()})`;
    }
    return argument;
  }

  /** A command argument: a braced group, or one character of the next token (`\frac12`, `\sqrt2`). */
  private parseArgument(): string {
    const token = this.peek();
    if (token === undefined) throw new LatexParseError('missing argument');
    if (token.kind === 'symbol' && token.text === '{') return this.parsePrimary();
    if (token.kind === 'number' || token.kind === 'letters') {
      this.pos++;
      this.pushBack(token.text.slice(1));
      return token.kind === 'number' ? token.text.slice(0, 1) : this.withSubscript(token.text.slice(0, 1));
    }
    if (token.kind === 'command') return this.parsePrimary();
    throw new LatexParseError(`bad argument ${describe(token)}`);
  }

  private parseBracketed(open: string): string {
    if (open === '(' || open === '[' || open === '{') {
      const close = open === '(' ? ')' : open === '[' ? ']' : '}';
      const inner = this.parseExpression();
      this.expectSymbol(close);
      return `(${inner})`;
    }
    if (open === '|') {
      this.absDepth++;
      const inner = this.parseExpression();
      this.expectSymbol('|');
      this.absDepth--;
      return `abs(${inner})`;
    }
    throw new LatexParseError(`unexpected ${JSON.stringify(open)}`);
  }

  /** `x` → `x`, `x_1` → `x_1`, `a_{n1}` → `a_n1`: a subscripted variable is one name. */
  private withSubscript(name: string): string {
    if (this.peekSymbol() !== '_') return name;
    this.pos++;
    return `${name}_${this.parseSubscriptName()}`;
  }

  private parseSubscriptName(): string {
    const token = this.next();
    if (token.kind === 'number' || token.kind === 'letters') return token.text.replace('.', '');
    if (token.kind === 'command' && GREEK_LETTERS.has(token.name)) return token.name;
    if (token.kind === 'symbol' && token.text === '{') {
      let name = '';
      for (let t = this.next(); !(t.kind === 'symbol' && t.text === '}'); t = this.next()) {
        if (t.kind === 'number' || t.kind === 'letters') name += t.text.replace('.', '');
        else if (t.kind === 'command' && GREEK_LETTERS.has(t.name)) name += t.name;
        else if (!(t.kind === 'symbol' && [',', '+', '-'].includes(t.text))) {
          throw new LatexParseError(`unsupported subscript ${describe(t)}`);
        }
      }
      if (name === '') throw new LatexParseError('empty subscript');
      return name;
    }
    throw new LatexParseError(`unsupported subscript ${describe(token)}`);
  }

  private multiplicativeOperator(): '*' | '/' | undefined {
    const token = this.peek();
    if (token?.kind === 'symbol' && (token.text === '*' || token.text === '/')) return token.text;
    if (token?.kind === 'command') {
      const op = OPERATOR_COMMANDS.get(token.name);
      if (op === '*' || op === '/') return op;
    }
    return undefined;
  }

  /** Whether the next token begins a factor that multiplies the previous one (`2x`, `3(x+1)`, `2\pi`). */
  private startsImplicitFactor(): boolean {
    const token = this.peek();
    if (token === undefined) return false;
    switch (token.kind) {
      case 'number':
        // `2 3` is two numbers, not a product.
        return this.tokens[this.pos - 1]?.kind !== 'number';
      case 'letters':
        return true;
      case 'command':
        return (
          FRACTION_COMMANDS.has(token.name) ||
          BINOMIAL_COMMANDS.has(token.name) ||
          token.name === 'sqrt' ||
          FUNCTION_COMMANDS.has(token.name) ||
          CONSTANT_COMMANDS.has(token.name) ||
          GREEK_LETTERS.has(token.name) ||
          BRACKET_FUNCTIONS.has(token.name)
        );
      case 'symbol':
        return ['(', '[', '{'].includes(token.text) || (token.text === '|' && this.absDepth === 0);
      case 'text':
        return false;
    }
  }

  private functionAhead(): boolean {
    const token = this.peek();
    if (token?.kind === 'command') return FUNCTION_COMMANDS.has(token.name);
    return token?.kind === 'letters' && WORD_FUNCTION_NAMES.some((w) => token.text.startsWith(w));
  }

  private peek(): Token | undefined {
    return this.tokens[this.pos];
  }

  private peekSymbol(): string | undefined {
    const token = this.peek();
    return token?.kind === 'symbol' ? token.text : undefined;
  }

  private next(): Token {
    const token = this.tokens[this.pos];
    if (token === undefined) throw new LatexParseError('unexpected end of input');
    this.pos++;
    return token;
  }

  /** Puts the unread rest of a split token back, e.g. `y` of `xy` or `2` of `\frac12`. */
  private pushBack(rest: string): void {
    if (rest === '') return;
    const previous = this.tokens[this.pos - 1] as Token;
    const kind = previous.kind === 'number' ? 'number' : 'letters';
    this.tokens.splice(this.pos, 0, { kind, text: rest });
  }

  private expectSymbol(text: string): void {
    const token = this.next();
    if (token.kind !== 'symbol' || token.text !== text) {
      throw new LatexParseError(`expected ${JSON.stringify(text)}, got ${describe(token)}`);
    }
  }

  private expectCommand(name: string): void {
    const token = this.next();
    if (token.kind !== 'command' || token.name !== name) {
      throw new LatexParseError(`expected \\${name}, got ${describe(token)}`);
    }
  }
}

function describe(token: Token): string {
  switch (token.kind) {
    case 'command':
      return `\\${token.name}`;
    case 'text':
      return `text ${JSON.stringify(token.content)}`;
    default:
      return JSON.stringify(token.text);
  }
}

function closingBrace(source: string, open: number): number {
  const close = matchingBrace(source, open);
  if (close === undefined) throw new LatexParseError('unbalanced braces');
  return close;
}

function skipSpaces(source: string, at: number): number {
  let i = at;
  while (i < source.length && /\s/.test(source[i] as string)) i++;
  return i;
}

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}

function isLetter(c: string | undefined): boolean {
  return c !== undefined && /^[A-Za-z]$/.test(c);
}
