import { extractLastBoxed } from '../scoring/boxed';
import { isParsableMath, numericValue } from '../scoring/math-equivalence';
import { ANSWER_KINDS, type AnswerKind } from '../scoring/verifiers';
import type { AnswerChecker } from '../scoring/answer-checker-pool';
import { jsonlRows } from '../lib/jsonl-rows';

/**
 * Held-out evaluation as data: the JSONL set, each answer's verdict by the recipes' rule verifiers (the last
 * `\boxed{}` against the gold answer, by its kind), and the score. Pure, so the rules are tested on their own.
 */

export interface EvalItem {
  /** The line's `id`, else its line number. */
  id: string;
  question: string;
  answer: string;
  /** The line's `kind` when given, else inferred from the gold answer (answerKindOf). */
  kind: AnswerKind;
}

export interface EvalVerdict {
  id: string;
  kind: AnswerKind;
  gold: string;
  /** The last `\boxed{}` of the completion; null when there is none (a wrong answer). */
  extracted: string | null;
  correct: boolean;
  completion: string;
}

/** `{"question", "answer"[, "id", "kind"]}` per line; blank lines skipped; every bad line is named. */
export function parseEvalSet(text: string): EvalItem[] {
  const items: EvalItem[] = [];
  const problems: string[] = [];
  for (const { line, row } of jsonlRows(text, problems)) {
    const { question, answer, id, kind } = row;
    if (typeof question !== 'string' || question.trim() === '')
      problems.push(`line ${line}: "question" must be a non-empty string`);
    else if (typeof answer !== 'string' && typeof answer !== 'number')
      problems.push(`line ${line}: "answer" must be a string or a number`);
    else if (kind !== undefined && !ANSWER_KINDS.includes(kind as AnswerKind))
      problems.push(`line ${line}: "kind" must be one of ${ANSWER_KINDS.join(', ')}`);
    else {
      const gold = String(answer);
      items.push({
        id: typeof id === 'string' || typeof id === 'number' ? String(id) : String(line),
        question,
        answer: gold,
        kind: (kind as AnswerKind | undefined) ?? answerKindOf(gold),
      });
    }
  }
  if (problems.length > 0) throw new Error(problems.join('; '));
  if (items.length === 0) throw new Error('no evaluation items');
  return items;
}

/**
 * The verifier for a gold answer: a single capital letter is an MCQ choice, a number compares by value, a
 * formula (digits or operators that parse as math) by mathematical equivalence, anything else as a
 * normalised string.
 */
export function answerKindOf(gold: string): AnswerKind {
  const g = gold.trim();
  if (/^\(?[A-J]\)?$/.test(g)) return 'mcq';
  if (numericValue(g) !== undefined) return 'integer';
  if (/[\d^*/+=\\()-]/.test(g) && isParsableMath(g)) return 'expression';
  return 'string';
}

export const evalPrompt = (question: string): string =>
  `${question}\n\nPlease reason step by step, and put your final answer within \\boxed{}.`;

/** The verdict for one completion; the check runs in `check` (the answer-checker pool) under its time limit. */
export async function judgeEvalAnswer(
  item: EvalItem,
  completion: string,
  check: AnswerChecker,
): Promise<EvalVerdict> {
  const extracted = extractLastBoxed(completion) ?? null;
  const correct =
    extracted !== null &&
    (await check({ kind: item.kind, predicted: extracted, gold: item.answer })).verdict === 'equivalent';
  return { id: item.id, kind: item.kind, gold: item.answer, extracted, correct, completion };
}

/** Share of correct verdicts; an empty set scores 0. */
export function scoreOf(verdicts: readonly Pick<EvalVerdict, 'correct'>[]): {
  correct: number;
  total: number;
  score: number;
} {
  const correct = verdicts.filter((v) => v.correct).length;
  return { correct, total: verdicts.length, score: verdicts.length ? correct / verdicts.length : 0 };
}
