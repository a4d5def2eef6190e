/**
 * Parsing SPELL's model outputs (spell.md §1.4, §1.7, §1.8). Every output is untrusted text: each parser
 * either returns a checked value or says why not, and never throws.
 */
import { extractChoiceLetter } from '../../scoring/verifiers';
import { parseNumber } from '../../scoring/numeric-answer';
import { approxTokens } from '../../scoring/tokens';
import { LETTERS, type Letter, type QuestionerOutcome, type SpellTask, type Vote } from './records';

/** The visible answer: the text after the last `</think>`; undefined when a `<think>` is never closed. */
export function afterThinking(text: string): string | undefined {
  const close = text.lastIndexOf('</think>');
  if (close >= 0) return text.slice(close + '</think>'.length);
  return text.includes('<think>') ? undefined : text;
}

/**
 * The questioner's JSON (§1.4): the last ```json block of the visible text, else the whole text. JSON.parse
 * decides; when it refuses, once more without trailing commas before `}` or `]` (the paper's own QA
 * example has one, so a model copying it must not lose its question over it).
 */
export function questionerJson(visible: string): unknown {
  const blocks = [...visible.matchAll(/```json\s*([\s\S]*?)```/gi)];
  const candidate = (blocks.at(-1)?.[1] ?? visible).trim();
  return parseJson(candidate) ?? parseJson(candidate.replace(/,(\s*[}\]])/g, '$1'));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const scalarText = (v: unknown): string | undefined =>
  typeof v === 'string' ? v.trim() : typeof v === 'number' && Number.isFinite(v) ? String(v) : undefined;

/**
 * A questioner output as a typed outcome (§1.4, §6): a schema violation is `bad_format` (r_que = −1); an
 * unclosed `<think>`, a general-QA answer over `maxAnswerTokens`, or a numeric answer that is 0 or not a
 * number is `discarded` (no questioner sample, as the code does).
 */
export function parseQuestioner(
  completion: string,
  task: SpellTask,
  maxAnswerTokens: number,
): QuestionerOutcome {
  const visible = afterThinking(completion);
  if (visible === undefined) return { kind: 'discarded', reason: 'unclosed_think' };
  const json = questionerJson(visible);
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    return { kind: 'bad_format', reason: 'no_json' };
  const fields = json as Record<string, unknown>;
  const question = typeof fields.question === 'string' ? fields.question.trim() : '';
  if (!question) return { kind: 'bad_format', reason: 'missing_question' };
  const answer = scalarText(fields.answer);
  if (!answer) return { kind: 'bad_format', reason: 'missing_answer' };

  switch (task) {
    case 'general_qa':
      if (approxTokens(answer) > maxAnswerTokens) return { kind: 'discarded', reason: 'answer_too_long' };
      return { kind: 'question', question: { task, question, answer } };
    case 'financial_math': {
      const value = parseNumber(answer);
      if (value === undefined) return { kind: 'discarded', reason: 'answer_not_numeric' };
      if (value === 0) return { kind: 'discarded', reason: 'answer_zero' };
      return { kind: 'question', question: { task, question, answer } };
    }
    case 'multiple_choice': {
      const options = parseOptions(fields.options);
      if (!options) return { kind: 'bad_format', reason: 'bad_options' };
      const letter = extractChoiceLetter(answer);
      if (!isLetter(letter)) return { kind: 'bad_format', reason: 'bad_choice_letter' };
      return { kind: 'question', question: { task, question, answer: letter, options } };
    }
  }
}

const isLetter = (v: string | undefined): v is Letter => (LETTERS as readonly string[]).includes(v ?? '');

/** Exactly the options A–D, each a non-empty string or number. */
function parseOptions(value: unknown): Record<Letter, string> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const entries = value as Record<string, unknown>;
  if (Object.keys(entries).length !== LETTERS.length) return undefined;
  const out: Partial<Record<Letter, string>> = {};
  for (const letter of LETTERS) {
    const text = scalarText(entries[letter]);
    if (!text) return undefined;
    out[letter] = text;
  }
  return out as Record<Letter, string>;
}

/** Longer "answers" are not answers; the cap also bounds the verifier prompt built from them. */
const MAX_ANSWER_CHARS = 1000;

/**
 * The responder's answer (§1.7): the rest of the line after the last "correct answer is" / "the answer is"
 * of the visible text, without wrapping quotes, bold markers, a trailing full stop or the parentheses of
 * the prompt's "(insert answer here)". Null when there is none (no verifier call, r_res = R_rule = 0).
 */
export function extractAnswer(completion: string): string | null {
  const visible = afterThinking(completion);
  if (visible === undefined) return null;
  const markers = [...visible.matchAll(/(?:correct answer is|the answer is)\s*:?/gi)];
  const last = markers.at(-1);
  if (!last) return null;
  const rest = visible.slice((last.index ?? 0) + last[0].length);
  let answer = (rest.split('\n')[0] ?? '').trim();
  for (let before = ''; before !== answer;) {
    before = answer;
    answer = answer
      .replace(/^\*\*(.*)\*\*$/s, '$1')
      .replace(/^"(.*)"$/s, '$1')
      .replace(/[.。]$/, '')
      .trim();
    if (/^\([^()]*\)$/.test(answer) && answer.length > 3) answer = answer.slice(1, -1).trim();
  }
  if (answer === '' || answer.length > MAX_ANSWER_CHARS) return null;
  return answer;
}

/**
 * A verifier judgment (§1.8): in the visible text after the last "Decision", [[YES]] → 1 and [[NO]] → 0;
 * no decision, or both (an echo of the format line), → −1.
 */
export function parseVote(completion: string): Vote {
  const visible = afterThinking(completion);
  if (visible === undefined) return -1;
  const at = visible.toLowerCase().lastIndexOf('decision');
  const decision = at >= 0 ? visible.slice(at) : visible;
  const yes = /\[\[\s*YES\s*\]\]/i.test(decision);
  const no = /\[\[\s*NO\s*\]\]/i.test(decision);
  return yes === no ? -1 : yes ? 1 : 0;
}
