/**
 * Parsing and validation of the Challenger's outputs (spec §4, §7): find the last JSON object tolerantly,
 * then validate it strictly. A failure carries a specific reason; the caller gives the attempt ρ.
 */
import type { AnswerKind } from '../../scoring/verifiers';
import { extractChoiceLetter } from '../../scoring/verifiers';
import { isParsableMath, numericValue } from '../../scoring/math-equivalence';
import type { FreeFormType } from './prompts';

export type { FreeFormType } from './prompts';

/** A valid task: `question` is what the Reasoner sees, `answer` the gold answer taken from the document. */
export interface SpiceTask {
  format: 'mcq' | 'free_form';
  answerKind: AnswerKind;
  question: string;
  answer: string;
}

export type InvalidReason =
  /** No JSON object could be parsed from the output. */
  | 'no_json'
  /** The question field is absent or empty (the prompts' "too simple" signal). */
  | 'missing_question'
  /** The question is a list, an object or a number, not one string. */
  | 'question_not_string'
  /** One string that enumerates several questions (`Q1: ... Q2: ...`). */
  | 'multiple_questions'
  /** The answer field is absent, null or empty. */
  | 'missing_answer'
  /** The answer is a list or an object. */
  | 'answer_not_scalar'
  /** `multiple_choice_correct` is not a single letter A-D. */
  | 'bad_choice_letter'
  /** A `Correct:` line in the question names a different letter from `multiple_choice_correct`. */
  | 'conflicting_choice'
  /** Not exactly four distinct, non-empty options A) to D). */
  | 'bad_options'
  /** The answer does not fit the requested type (a non-integer Integer, an Expression that does not parse). */
  | 'wrong_answer_type'
  /** A String answer of more than three words. */
  | 'answer_too_long'
  /** The question points at the source ("according to the text"), which the Reasoner never sees. */
  | 'refers_to_document'
  /** The question still marks the correct option after the `Correct:` line is removed. */
  | 'answer_leak';

export type ChallengerRequest = { format: 'mcq' } | { format: 'free_form'; answerType: FreeFormType };

export type ChallengerParse = { ok: true; task: SpiceTask } | { ok: false; reason: InvalidReason };

export type TypeSelection =
  | { ok: true; format: 'mcq' }
  | { ok: true; format: 'free_form'; answerType: FreeFormType }
  | { ok: false; reason: string };

const FREE_FORM_TYPES: readonly FreeFormType[] = ['Integer', 'Expression', 'String'];
const ANSWER_KINDS: Record<FreeFormType, AnswerKind> = {
  Integer: 'integer',
  Expression: 'expression',
  String: 'string',
};
const MAX_STRING_ANSWER_WORDS = 3;
const OPTION_LETTERS = ['A', 'B', 'C', 'D'] as const;

/**
 * The last top-level `{...}` in the text that JSON.parse accepts, skipping prose, code fences and closed
 * `<think>` blocks. Brace matching is string-aware, and backslashes that are LaTeX rather than JSON escapes
 * (`"\frac{1}{2}"`, `"\times"`) are kept as backslashes instead of failing or turning into control characters.
 */
export function extractLastJsonObject(text: string): unknown {
  const visible = text.replace(/<think>[\s\S]*?<\/think>/g, ' ');
  let found: unknown;
  let from = 0;
  for (;;) {
    const open = visible.indexOf('{', from);
    if (open < 0) return found;
    const close = closingBraceOfJson(visible, open);
    const parsed = close === undefined ? undefined : parseJson(visible.slice(open, close + 1));
    if (parsed === undefined) {
      from = open + 1; // an object may still start inside this unparsable span
    } else {
      found = parsed;
      from = (close as number) + 1; // objects nested in this one are not top-level
    }
  }
}

/** Index of the `}` matching the `{` at `open`, skipping braces inside JSON strings. */
function closingBraceOfJson(text: string, open: number): number | undefined {
  let depth = 0;
  let inString = false;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
    } else if (c === '{') {
      depth++;
    } else if (c === '}' && --depth === 0) {
      return i;
    }
  }
  return undefined;
}

function parseJson(candidate: string): unknown {
  try {
    return JSON.parse(escapeLatexBackslashes(candidate)) as unknown;
  } catch {
    return undefined;
  }
}

/** `\n` followed by these is LaTeX (`\neq`, `\nu`), not a newline. */
const LATEX_AFTER_N = /^n(?:eq|e|u|abla|eg|ot|otin|i|mid|leq|geq|ewline|parallel)(?![A-Za-z])/;

/**
 * Doubles backslashes inside JSON strings that are not JSON escapes: any `\` before a character JSON does
 * not escape, `\b` `\f` `\r` `\t` before a letter (`\frac`, `\times`, `\beta`, `\rho`) and `\n` before a
 * LaTeX command name. Already-escaped `\\` pairs are left alone.
 */
function escapeLatexBackslashes(json: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json[i] as string;
    if (!inString) {
      if (c === '"') inString = true;
      out += c;
      continue;
    }
    if (c === '"') {
      inString = false;
      out += c;
    } else if (c === '\\') {
      const next = json[i + 1] ?? '';
      const rest = json.slice(i + 1, i + 16);
      const isJsonEscape =
        next === '\\' ||
        next === '"' ||
        next === '/' ||
        (next === 'u' && /^u[0-9a-fA-F]{4}/.test(rest)) ||
        ('bfrt'.includes(next) && next !== '' && !/^[A-Za-z]{2}/.test(rest)) ||
        (next === 'n' && !LATEX_AFTER_N.test(rest));
      if (isJsonEscape) {
        out += c + next;
        i++;
      } else {
        out += '\\\\';
      }
    } else {
      out += c;
    }
  }
  return out;
}

/** Fig. 9's answer, strictly: exactly one of the two booleans true, and a type for free form. */
export function parseTypeSelection(text: string): TypeSelection {
  const json = extractLastJsonObject(text);
  if (!isRecord(json)) return { ok: false, reason: 'no_json' };
  const mcq = json['suitable_for_mcq'];
  const freeForm = json['suitable_for_free_form'];
  if (typeof mcq !== 'boolean' || typeof freeForm !== 'boolean')
    return { ok: false, reason: 'flags_not_boolean' };
  if (mcq === freeForm) return { ok: false, reason: 'not_exactly_one_format' };
  if (mcq) return { ok: true, format: 'mcq' };
  const declared = json['best_answer_type'];
  // Case is forgiven ("integer"); the value itself is not.
  const answerType = FREE_FORM_TYPES.find(
    (t) => typeof declared === 'string' && t.toLowerCase() === declared.trim().toLowerCase(),
  );
  if (answerType === undefined) return { ok: false, reason: 'bad_answer_type' };
  return { ok: true, format: 'free_form', answerType };
}

/** Fig. 10's answer, validated for the format (and answer type) that was requested. */
export function parseChallengerOutput(text: string, request: ChallengerRequest): ChallengerParse {
  const json = extractLastJsonObject(text);
  if (!isRecord(json)) return invalid('no_json');
  return request.format === 'mcq' ? parseMcq(json) : parseFreeForm(json, request.answerType);
}

function parseMcq(json: Record<string, unknown>): ChallengerParse {
  const raw = json['multiple_choice_question'];
  if (raw === undefined || raw === null || raw === '') return invalid('missing_question');
  if (typeof raw !== 'string') return invalid('question_not_string');
  const correctField = json['multiple_choice_correct'];
  if (correctField === undefined || correctField === null || correctField === '')
    return invalid('missing_answer');
  if (typeof correctField !== 'string') return invalid('bad_choice_letter');
  const letter = extractChoiceLetter(correctField);
  if (letter === undefined || !(OPTION_LETTERS as readonly string[]).includes(letter)) {
    return invalid('bad_choice_letter');
  }
  const { question, statedLetters } = stripCorrectLines(raw);
  if (statedLetters.some((stated) => stated !== letter)) return invalid('conflicting_choice');
  const stem = splitOptions(question);
  if (stem === undefined) return invalid('bad_options');
  if (stem.replace(/^\s*\**question\**\s*:?/i, '').trim() === '') return invalid('missing_question');
  const problem = questionProblem(question);
  if (problem !== undefined) return invalid(problem);
  if (/\((?:correct|right answer)\)|[✓✔]/i.test(question)) return invalid('answer_leak');
  return { ok: true, task: { format: 'mcq', answerKind: 'mcq', question, answer: letter } };
}

/**
 * Removes what the MCQ format asks for after the options, `Correct: [Letter]` (spec §7, answer leakage):
 * a line starting `Correct:`, `Correct answer:` or `Answer:`, or such a label with a lone letter at the end
 * of a line (inline option lists). Returns the question and the letters those labels stated.
 */
function stripCorrectLines(raw: string): { question: string; statedLetters: string[] } {
  const statedLetters: string[] = [];
  const record = (rest: string): void => {
    const stated = extractChoiceLetter(rest);
    if (stated !== undefined) statedLetters.push(stated);
  };
  const label = String.raw`\**(?:correct(?:\s+(?:answer|option))?|answer)\**\s*:\**`;
  const question = raw
    .replace(new RegExp(String.raw`^[^\S\n]*${label}([^\n]*)$\n?`, 'gim'), (_line: string, rest: string) => {
      record(rest);
      return '';
    })
    .replace(
      new RegExp(String.raw`[^\S\n]+${label}[^\S\n]*(\**\(?[A-Da-d]\)?\**\.?)[^\S\n]*$`, 'gim'),
      (_label: string, letter: string) => {
        record(letter);
        return '';
      },
    )
    .trim();
  return { question, statedLetters };
}

/**
 * Checks the options A) to D): each present once, in order, non-empty and distinct, with no fifth option.
 * Returns the stem (the text before A), or undefined when the options are malformed. Markers are `A)`,
 * `(A)`, `A.` or `A:` at the start of a line or after whitespace.
 */
function splitOptions(question: string): string | undefined {
  const marker = (letter: string): RegExp => new RegExp(`(^|\\s)\\(?${letter}[).:]\\s`, 'g');
  const positions: Array<{ start: number; end: number }> = [];
  let from = 0;
  for (const letter of OPTION_LETTERS) {
    const re = marker(letter);
    re.lastIndex = from;
    const match = re.exec(question);
    if (match === null) return undefined;
    const start = match.index + (match[1] as string).length;
    positions.push({ start, end: match.index + match[0].length });
    from = match.index + match[0].length;
  }
  const fifth = marker('E');
  fifth.lastIndex = from;
  if (fifth.test(question)) return undefined;
  const options = positions.map((p, i) => question.slice(p.end, positions[i + 1]?.start ?? question.length));
  const normalized = options.map((o) =>
    o
      .trim()
      .replace(/[\s.;,]+$/, '')
      .replace(/\s+/g, ' ')
      .toLowerCase(),
  );
  if (normalized.some((o) => o === '') || new Set(normalized).size !== normalized.length) return undefined;
  return question.slice(0, (positions[0] as { start: number }).start);
}

function parseFreeForm(json: Record<string, unknown>, answerType: FreeFormType): ChallengerParse {
  const question = json['question'];
  if (question === undefined || question === null || question === '') return invalid('missing_question');
  if (typeof question !== 'string') return invalid('question_not_string');
  if (question.trim() === '') return invalid('missing_question');
  const problem = questionProblem(question);
  if (problem !== undefined) return invalid(problem);
  const answer = scalarAnswer(json['answer']);
  if (!answer.ok) return invalid(answer.reason);
  const typeProblem = answerTypeProblem(answer.value, answerType);
  if (typeProblem !== undefined) return invalid(typeProblem);
  return {
    ok: true,
    task: {
      format: 'free_form',
      answerKind: ANSWER_KINDS[answerType],
      question: question.trim(),
      answer: answer.value,
    },
  };
}

function scalarAnswer(
  value: unknown,
): { ok: true; value: string } | { ok: false; reason: 'missing_answer' | 'answer_not_scalar' } {
  if (value === undefined || value === null) return { ok: false, reason: 'missing_answer' };
  if (typeof value === 'object') return { ok: false, reason: 'answer_not_scalar' };
  if (typeof value === 'number' || typeof value === 'boolean') return { ok: true, value: String(value) };
  if (typeof value !== 'string' || value.trim() === '') return { ok: false, reason: 'missing_answer' };
  return { ok: true, value: value.trim() };
}

function answerTypeProblem(answer: string, answerType: FreeFormType): InvalidReason | undefined {
  switch (answerType) {
    case 'Integer': {
      const value = numericValue(answer);
      return value !== undefined && Number.isInteger(value) ? undefined : 'wrong_answer_type';
    }
    case 'Expression':
      return isParsableMath(answer) ? undefined : 'wrong_answer_type';
    case 'String':
      return countWords(answer) > MAX_STRING_ANSWER_WORDS ? 'answer_too_long' : undefined;
  }
}

function countWords(answer: string): number {
  const plain = answer.replace(/\\(?:text|textbf|mathrm)\s*\{([^{}]*)\}/g, '$1');
  return plain.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w)).length;
}

function questionProblem(question: string): InvalidReason | undefined {
  if (refersToDocument(question)) return 'refers_to_document';
  if (enumeratesQuestions(question)) return 'multiple_questions';
  return undefined;
}

const SOURCE_NOUN = String.raw`(?:text|document|passage|article|excerpt|snippet|source\s+(?:text|material))`;
const SOURCE_MODIFIER = String.raw`(?:(?:above|preceding|following|given|provided|original|source|attached|same)\s+)?`;
const SOURCE = String.raw`(?:the|this|that)\s+${SOURCE_MODIFIER}${SOURCE_NOUN}\b(?!\s+of\b)`;

/**
 * Phrases that point at the Challenger's source, which the Reasoner never sees (the spec's addition to the
 * paper, §7; the prompts forbid them). Each needs a preposition or a reporting verb next to the noun, so
 * "the text of the Magna Carta" and "which article (a/an/the) ..." pass. Words with common literal uses
 * ("paper", "source", "reading") are left out:
 * - "according to / based on / in / from / within / throughout / per / of the (given) text|document|passage|
 *   article|excerpt|snippet|source text|source material";
 * - "as stated / described / mentioned / discussed / ... in the ..." (covered by "in the ...");
 * - "the passage states / says / mentions / describes / suggests / ...";
 * - "as mentioned / stated / noted / described / discussed / shown above / earlier / previously";
 * - "according to the author(s)" and "the author argues / claims / suggests / ..." without "of".
 */
const DOCUMENT_REFERENCES: readonly RegExp[] = [
  new RegExp(String.raw`\b(?:according\s+to|based\s+on|in|from|within|throughout|per|of)\s+${SOURCE}`, 'i'),
  new RegExp(
    String.raw`\b${SOURCE}\s+(?:states?|says?|mentions?|describes?|discusses|notes?|claims?|suggests?|argues?|explains?|shows?|indicates?|reports?|presents?|defines?|lists?|implies|highlights?)\b`,
    'i',
  ),
  /\bas\s+(?:mentioned|stated|noted|described|discussed|shown|explained|outlined|given)\s+(?:above|earlier|previously|before)\b/i,
  /\baccording\s+to\s+the\s+authors?\b/i,
  /\bthe\s+authors?\s+(?:argues?|claims?|suggests?|states?|believes?|implies|means?|describes?|proposes?|concludes?)\b/i,
];

export function refersToDocument(question: string): boolean {
  return DOCUMENT_REFERENCES.some((re) => re.test(question));
}

/** `Q1: ... Q2: ...`, `Question 1 ... Question 2`, `(1) ... (2) ...` at line starts: several questions. */
function enumeratesQuestions(question: string): boolean {
  const labels = question.match(/(?:^|\n|\s)(?:q(?:uestion)?\s*\d+\s*[:.)])/gi) ?? [];
  if (labels.length >= 2) return true;
  const numberedLines = question.match(/(?:^|\n)\s*(?:\(\d+\)|\d+[.)])\s+[^\n]*\?/g) ?? [];
  return numberedLines.length >= 2;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(reason: InvalidReason): ChallengerParse {
  return { ok: false, reason };
}
