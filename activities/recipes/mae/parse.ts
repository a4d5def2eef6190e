import { tagContents } from '../../scoring/tags';
import { QUESTION_PLACEHOLDER } from './prompts';
import type { QuestionRejection } from './records';

/**
 * What MAE takes out of its roles' outputs (model outputs are untrusted text). One rule for every tag:
 * the last pair counts, as in the reference code, so reasoning that drafts a question first and then
 * writes the final one is read as intended.
 */

export type ExtractedQuestion =
  | { ok: true; question: string }
  | { ok: false; reason: Exclude<QuestionRejection, 'below_threshold' | 'excluded'> };

/**
 * The proposed question: the last `<question>` pair's content. No pair, an empty pair, or the template's
 * own placeholder left in place (failure mode 3) yield no question, and r_P = 0.
 */
export function extractQuestion(completion: string): ExtractedQuestion {
  const last = tagContents(completion, 'question').at(-1);
  if (last === undefined) return { ok: false, reason: 'no_question' };
  if (last === '') return { ok: false, reason: 'empty_question' };
  if (last === QUESTION_PLACEHOLDER) return { ok: false, reason: 'placeholder' };
  return { ok: true, question: last };
}

/**
 * What the Judge is shown of a Solver output (L4's `{answer}`): the final response inside the last
 * `<answer>` pair, or the whole output when the Solver wrote none, so a missing tag costs the format reward
 * but does not hide the answer from the Judge (an inference; the paper does not say).
 */
export function answerForJudge(completion: string): string {
  const last = tagContents(completion, 'answer').at(-1);
  return last !== undefined && last !== '' ? last : completion.trim();
}
