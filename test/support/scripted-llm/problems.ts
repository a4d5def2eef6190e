import { seedOf, type Rng } from '../../../activities/lib/rng';
import type { AnswerType } from './config';

/**
 * The tasks the scripted server writes as challenger and answers as reasoner. Every question is a
 * self-contained statement `Problem <8 hex>: <body>` whose gold answer is recomputed by parsing the body back,
 * and whose difficulty is a hash of the statement: the server keeps no memory of what it wrote, so it
 * answers the same after a restart and recognises its tasks inside any prompt wrapper.
 */

export interface Problem {
  /** e.g. `Problem 3f9a0c12: compute 37 * 12 - 5.` */
  statement: string;
  /** The statement without its `Problem <id>: ` head, e.g. `compute 37 * 12 - 5.` */
  body: string;
  type: AnswerType;
  gold: string;
}

/** A task as the reasoner sees it: free-form (gold is the value) or MCQ (gold is the letter). */
export interface Task {
  statement: string;
  gold: string;
  /** A wrong answer of the same kind, different from the gold. */
  wrong(rng: Rng): string;
}

interface Template {
  type: AnswerType;
  /** A statement body built from the document. */
  compose(rng: Rng, document: string): string;
  /** The prefix of `text` this template wrote and its gold answer, or undefined if it is not one of its own. */
  read(text: string): { body: string; gold: string } | undefined;
  /** A wrong answer to the body, never equal to its gold. */
  wrong(body: string, rng: Rng): string;
}

const nonZeroOffset = (rng: Rng, max: number): number => (rng.int(2) === 0 ? -1 : 1) * (1 + rng.int(max));

type Op = '+' | '-' | '*';
const OPS: readonly Op[] = ['+', '-', '*'];
const apply = (x: number, op: Op, y: number): number => (op === '+' ? x + y : op === '-' ? x - y : x * y);

/** Integer: a two-operator calculation on numbers found in the document, where precedence matters. */
const arithmetic: Template = {
  type: 'Integer',
  compose(rng, document) {
    const found = (document.match(/\b\d{1,2}\b/g) ?? []).map(Number).filter((v) => v >= 2);
    const operand = (): number => (found.length > 0 ? rng.pick(found) : 2 + rng.int(98));
    return `compute ${operand()} ${rng.pick(OPS)} ${operand()} ${rng.pick(OPS)} ${operand()}.`;
  },
  read(text) {
    const m = /^compute (\d+) ([-+*]) (\d+) ([-+*]) (\d+)\./.exec(text);
    if (!m) return undefined;
    const [a, b, c] = [Number(m[1]), Number(m[3]), Number(m[5])];
    const [op1, op2] = [m[2] as Op, m[4] as Op];
    const value = op2 === '*' && op1 !== '*' ? apply(a, op1, b * c) : apply(apply(a, op1, b), op2, c);
    return { body: m[0], gold: String(value) };
  },
  wrong(body, rng) {
    return String(Number(this.read(body)?.gold) + nonZeroOffset(rng, 10));
  },
};

/** `[a, b, c]` as the canonical `a*x^2 + b*x + c`, leaving out zero terms and unit coefficients. */
function formatQuadratic(coefficients: readonly number[]): string {
  const terms: string[] = [];
  coefficients.forEach((c, i) => {
    if (c === 0) return;
    const power = coefficients.length - 1 - i;
    const variable = power === 0 ? '' : power === 1 ? 'x' : `x^${power}`;
    const magnitude =
      Math.abs(c) === 1 && variable ? variable : variable ? `${Math.abs(c)}*${variable}` : `${Math.abs(c)}`;
    terms.push(terms.length === 0 ? `${c < 0 ? '-' : ''}${magnitude}` : `${c < 0 ? '-' : '+'} ${magnitude}`);
  });
  return terms.length === 0 ? '0' : terms.join(' ');
}

const EXPAND = /^expand \((\d)\*x ([-+]) (\d)\)\*\((\d)\*x ([-+]) (\d)\) into a polynomial in x\./;

/** The three coefficients of an expand body, or undefined if `text` does not start with one. */
function expandCoefficients(text: string): { body: string; coefficients: number[] } | undefined {
  const m = EXPAND.exec(text);
  if (!m) return undefined;
  const [a, c] = [Number(m[1]), Number(m[4])];
  const b = (m[2] === '-' ? -1 : 1) * Number(m[3]);
  const d = (m[5] === '-' ? -1 : 1) * Number(m[6]);
  return { body: m[0], coefficients: [a * c, a * d + b * c, b * d] };
}

/** Expression: expand a product of two linear factors. */
const expansion: Template = {
  type: 'Expression',
  compose(rng) {
    const factor = (): string => `${1 + rng.int(9)}*x ${rng.pick(['+', '-'])} ${1 + rng.int(9)}`;
    return `expand (${factor()})*(${factor()}) into a polynomial in x.`;
  },
  read(text) {
    const parsed = expandCoefficients(text);
    return parsed && { body: parsed.body, gold: formatQuadratic(parsed.coefficients) };
  },
  wrong(body, rng) {
    // The classic slip: a wrong cross term.
    const [x2 = 0, x1 = 0, x0 = 0] = expandCoefficients(body)?.coefficients ?? [];
    return formatQuadratic([x2, x1 + nonZeroOffset(rng, 10), x0]);
  },
};

const FALLBACK_WORDS = ['falcon', 'harbor', 'lantern', 'meadow', 'quartz', 'violet', 'glacier', 'timber'];
const LETTERS_AZ = 'abcdefghijklmnopqrstuvwxyz';

/** String: a word from the document, reversed (one word, exact match). */
const reversal: Template = {
  type: 'String',
  compose(rng, document) {
    const words = (document.match(/\b[A-Za-z]{5,10}\b/g) ?? []).map((w) => w.toLowerCase());
    return `write the word "${rng.pick(words.length > 0 ? words : FALLBACK_WORDS)}" backwards.`;
  },
  read(text) {
    const m = /^write the word "([a-z]+)" backwards\./.exec(text);
    return m ? { body: m[0], gold: [...(m[1] ?? '')].reverse().join('') } : undefined;
  },
  wrong(body, rng) {
    const gold = this.read(body)?.gold ?? '';
    const last = gold.at(-1) ?? '';
    const other = rng.pick([...LETTERS_AZ].filter((l) => l !== last));
    return `${gold.slice(0, -1)}${other}`;
  },
};

const TEMPLATES: Readonly<Record<AnswerType, Template>> = {
  Integer: arithmetic,
  Expression: expansion,
  String: reversal,
};

export function composeProblem(type: AnswerType, rng: Rng, document: string): Problem {
  const template = TEMPLATES[type];
  const id = rng.int(0x1_0000_0000).toString(16).padStart(8, '0');
  const body = template.compose(rng, document);
  const gold = template.read(body)?.gold;
  if (gold === undefined) throw new Error(`template ${type} cannot read its own body: ${body}`);
  return { statement: `Problem ${id}: ${body}`, body, type, gold };
}

/** The last problem statement in `text` that one of the templates wrote, with its recomputed gold. */
function findProblem(text: string): { problem: Problem; template: Template } | undefined {
  const heads = [...text.matchAll(/Problem ([0-9a-f]{8}): /g)].reverse();
  for (const head of heads) {
    const rest = text.slice((head.index ?? 0) + head[0].length);
    for (const template of Object.values(TEMPLATES)) {
      const read = template.read(rest);
      if (read) {
        const problem = {
          statement: `${head[0]}${read.body}`,
          body: read.body,
          type: template.type,
          gold: read.gold,
        };
        return { problem, template };
      }
    }
  }
  return undefined;
}

export const LETTERS = ['A', 'B', 'C', 'D'] as const;
export type Letter = (typeof LETTERS)[number];

export interface Mcq {
  problem: Problem;
  /** The four options, in letter order; exactly one equals the gold. */
  options: string[];
  correct: Letter;
}

/** An MCQ around an Integer problem: the gold at a hashed letter, three distinct wrong values elsewhere. */
export function composeMcq(rng: Rng, document: string): Mcq {
  const problem = composeProblem('Integer', rng, document);
  const values = new Set([problem.gold]);
  while (values.size < LETTERS.length) values.add(arithmetic.wrong(problem.body, rng));
  const distractors = [...values].slice(1);
  const at = rng.int(LETTERS.length);
  const options = [...distractors.slice(0, at), problem.gold, ...distractors.slice(at)];
  return { problem, options, correct: LETTERS[at] as Letter };
}

/** The spec's MCQ format: `Question: ...\nA) ...\nB) ...\nC) ...\nD) ...\nCorrect: X`. */
export function mcqText(question: string, options: readonly string[], correct?: Letter): string {
  const lines = [`Question: ${question}`, ...options.map((o, i) => `${LETTERS[i]}) ${o}`)];
  return (correct ? [...lines, `Correct: ${correct}`] : lines).join('\n');
}

/** The task in a reasoner prompt, or undefined when the server did not write it (or wrote it invalid). */
export function recogniseTask(text: string): Task | undefined {
  const found = findProblem(text);
  if (!found) return undefined;
  const { problem, template } = found;
  const options = [...text.matchAll(/^\s*([A-D])\)\s*(.+?)\s*$/gm)].map((m) => ({
    letter: m[1] as Letter,
    value: m[2],
  }));
  if (options.length === 0) {
    return {
      statement: problem.statement,
      gold: problem.gold,
      wrong: (rng) => template.wrong(problem.body, rng),
    };
  }
  const matching = options.filter((o) => o.value === problem.gold);
  const gold = matching[0]?.letter;
  if (matching.length !== 1 || gold === undefined) return undefined;
  return { statement: problem.statement, gold, wrong: (rng) => rng.pick(LETTERS.filter((l) => l !== gold)) };
}

/** A task's pass rate: uniform in [min, max] by a hash of its statement, so any process computes the same. */
export function passRateOf(statement: string, range: { min: number; max: number }): number {
  return range.min + (range.max - range.min) * (seedOf('pass-rate', statement) / 0x1_0000_0000);
}
