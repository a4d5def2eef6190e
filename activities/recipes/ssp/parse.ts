import { squadNormalize } from '../../scoring/cover-exact-match';
import { tagContents, withoutThink } from '../../scoring/tags';
import type { StoredTrajectory, Verdict } from './records';

/**
 * Reading the model's outputs (ssp.md §1.3, §1.5, §2). Everything here is untrusted text: a trajectory's
 * completion also holds retrieved documents, which may contain tags of their own, so tags are read only from
 * the text the model wrote (the completion minus its loss-masked observation spans).
 */

/** The completion without the spans the environment wrote; spans are [start, end) in code points. */
export function modelText(trajectory: Pick<StoredTrajectory, 'completion' | 'lossMaskSpans'>): string {
  const points = [...trajectory.completion];
  const spans = [...trajectory.lossMaskSpans].sort((a, b) => a[0] - b[0]);
  let out = '';
  let at = 0;
  for (const [start, end] of spans) {
    if (start > at) out += points.slice(at, start).join('');
    at = Math.max(at, end);
  }
  return out + points.slice(at).join('');
}

/** The first `<question>…</question>`, trimmed (the code's `<question>\s*(.*?)\s*</question>`); null if none. */
export function extractQuestion(text: string): string | null {
  const [first] = tagContents(text, 'question');
  return first === undefined || first === '' ? null : first;
}

/** The last `<answer>…</answer>`, trimmed (§2 [C]); null when there is none or it is empty. */
export function extractFinalAnswer(text: string): string | null {
  const last = tagContents(text, 'answer').at(-1);
  return last === undefined || last === '' ? null : last;
}

/** The larger of the `<answer>` and `</answer>` counts: the code's guard against tag spam (§2). */
export function answerTagCount(text: string): number {
  const count = (re: RegExp): number => (text.match(re) ?? []).length;
  return Math.max(count(/<answer>/gi), count(/<\/answer>/gi));
}

/**
 * The RAG verifier's answer: the text after the last `Answer:` (a full-width colon too), up to the end of its
 * line; null when there is none. The code's `Answer[:：]?\s*(.*)` also takes "Answer" without a colon, which
 * matches "Answer the question..." in a model's restatement; the prompt asks for "Answer:", so the colon is
 * required, and an output without one fails verification. The last one, as a model may restate the format.
 */
export function extractRagAnswer(text: string): string | null {
  const matches = [...text.matchAll(/\banswer\s*[:：]\s*([^\n]*)/gi)];
  for (let i = matches.length - 1; i >= 0; i--) {
    const answer = (matches[i]?.[1] ?? '').trim();
    if (answer !== '') return answer;
  }
  return null;
}

/** §2: normalised exact match (lower case, punctuation and articles removed, spaces collapsed). */
export function exactMatch(prediction: string, reference: string): boolean {
  const gold = squadNormalize(reference);
  return gold !== '' && squadNormalize(prediction) === gold;
}

/**
 * The judge's verdict, read strictly: the whole words "correct", "incorrect" and "wrong" (and "not
 * correct") are collected; all of them must agree. "Incorrect" is never read as "correct" (the code's
 * `"correct" in text.lower()` did exactly that, §7), and an output that says both, or neither, is
 * `unparseable`, which every caller treats as not correct. A `<think>` block is not part of the verdict.
 */
export function parseVerdict(text: string): Verdict {
  const visible = withoutThink(text);
  const words = [...visible.matchAll(/\b(?:(not|isn't|is\s+not)\s+)?(incorrect|correct|wrong)\b/gi)].map(
    (m) => (m[1] === undefined && m[2]?.toLowerCase() === 'correct' ? 'correct' : 'wrong'),
  );
  if (words.length === 0) return 'unparseable';
  return words.every((w) => w === words[0]) ? (words[0] as Verdict) : 'unparseable';
}
