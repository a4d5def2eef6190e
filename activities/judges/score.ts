import type { ChatRequest, LlmCaller } from '../clients/inference';
import { tagContents } from '../scoring/tags';

/**
 * A 1–10 score judge as a shared part (MAE §2.1): the judge model writes its analysis and then
 * `<score>X</score>`; the score is parsed tolerantly, mapped onto [0, 1], and replaced by a neutral 0.5 when
 * nothing can be parsed. Every fallback is reported, never hidden: a judge that stops writing scores shows up
 * as a rising fallback count, not as a silent drift towards 0.5 (failure mode 3 of the spec).
 */

/** How X ∈ [1, 10] becomes a reward in [0, 1]; `(x-1)/9` is the reference code's, under which 0.7 ⇔ X ≥ 8. */
export type ScoreMapping = '(x-1)/9' | 'x/10';

/** The value of a score that could not be parsed. */
export const NEUTRAL_SCORE = 0.5;

export type ScoreFallback =
  /** No `<score>…</score>` pair in the output (an empty output included). */
  | 'no_score_tag'
  /** Pairs exist, but none holds a number. */
  | 'unparsable_score';

export type ParsedScore = { ok: true; x: number } | { ok: false; reason: ScoreFallback };

/** One judgement: the judge's text, the parsed X when there was one, and the value the rewards use. */
export interface JudgeScore {
  completion: string;
  value: number;
  x?: number;
  fallback?: ScoreFallback;
}

/**
 * The first `<score>` pair whose content holds a number, read as a fraction, then a decimal, then an
 * integer (the reference code's order). A fraction a/b is a score on a scale of b and becomes X = 10·a/b,
 * so `4/5` is 8; a zero denominator is no number. A sign is kept, so `-3` maps to 0, not to 3.
 */
export function parseScore(text: string): ParsedScore {
  const contents = tagContents(text, 'score');
  if (contents.length === 0) return { ok: false, reason: 'no_score_tag' };
  for (const content of contents) {
    const x = readNumber(content);
    if (x !== undefined) return { ok: true, x };
  }
  return { ok: false, reason: 'unparsable_score' };
}

function readNumber(content: string): number | undefined {
  const fraction = /(-?\d+(?:\.\d+)?)\s*\/\s*(\d+(?:\.\d+)?)/.exec(content);
  if (fraction) {
    const denominator = Number(fraction[2]);
    return denominator > 0 ? (10 * Number(fraction[1])) / denominator : undefined;
  }
  const decimal = /-?\d+\.\d+/.exec(content) ?? /-?\d+/.exec(content);
  return decimal ? Number(decimal[0]) : undefined;
}

/** X mapped onto [0, 1] and clipped there (a 0 or a 15 is the judge's mistake, not a reason for a fallback). */
export function mapScore(x: number, mapping: ScoreMapping): number {
  const v = mapping === '(x-1)/9' ? (x - 1) / 9 : x / 10;
  return Math.min(1, Math.max(0, v));
}

/** A judge's output as a score: the mapped X, or the neutral value and the reason. */
export function judgeScore(completion: string, mapping: ScoreMapping): JudgeScore {
  const parsed = parseScore(completion);
  return parsed.ok
    ? { completion, value: mapScore(parsed.x, mapping), x: parsed.x }
    : { completion, value: NEUTRAL_SCORE, fallback: parsed.reason };
}

/**
 * Asks a judge endpoint for one judgement. Which model judges is the caller's choice of endpoint: the policy
 * itself, or a separate (frozen) model configured for the judge role.
 */
export async function askScoreJudge(
  llm: LlmCaller,
  request: Omit<ChatRequest, 'n'>,
  mapping: ScoreMapping,
): Promise<JudgeScore> {
  const [sample] = await llm.chat({ ...request, n: 1 });
  return judgeScore(sample?.content ?? '', mapping);
}
