import type { ChatRequest, LlmCaller } from '../clients/inference';
import { tagContents, withoutThink } from '../scoring/tags';
import type { ScoreFallback } from './score';

/**
 * A binary judge as a shared part (SCOPE's quality gates and per-rubric grading): the judge reasons in
 * `<think>` and ends with `<score>0</score>` or `<score>1</score>`. Its output is untrusted text: the score
 * is read only outside `<think>` (reasoning that quotes a score does not count), the last well-formed score
 * wins (a judge that revises itself ends with its verdict), and anything else is a 0, because the graders
 * are told "when in doubt, score 0". Every fallback is reported with its reason, so a judge that stops
 * writing scores shows up as a rising fallback count rather than as silently harder tasks.
 */
export interface BinaryScore {
  value: 0 | 1;
  fallback?: ScoreFallback;
}

const VERDICT = /^([01])(?:\.0*)?$/;

export function parseBinaryScore(text: string): BinaryScore {
  const outside = withoutThink(text);
  const contents = tagContents(outside, 'score');
  if (contents.length === 0) return { value: 0, fallback: 'no_score_tag' };
  const verdicts = contents.flatMap((c) => VERDICT.exec(c)?.[1] ?? []);
  const last = verdicts.at(-1);
  return last === undefined ? { value: 0, fallback: 'unparsable_score' } : { value: last === '1' ? 1 : 0 };
}

/** Asks a judge endpoint for one binary verdict. */
export async function askBinaryJudge(llm: LlmCaller, request: Omit<ChatRequest, 'n'>): Promise<BinaryScore> {
  const [sample] = await llm.chat({ ...request, n: 1 });
  return parseBinaryScore(sample?.content ?? '');
}
