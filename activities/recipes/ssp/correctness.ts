import type { LlmCaller } from '../../clients/inference';
import type { SspParams } from '../../../config/presets/ssp';
import { exactMatch, parseVerdict } from './parse';
import { judgeMessages } from './prompts';
import { JUDGE, type JudgeRecord } from './records';

/**
 * Is an answer the ground truth? ssp.md §2: normalised exact match first, then the LLM judge for answers EM
 * misses. The judge's output is untrusted: only an unambiguous "Correct" counts (parseVerdict).
 */

export interface JudgeCall {
  llm: LlmCaller;
  call: string;
  seed: number;
  sampling: SspParams['judge'];
  signal?: AbortSignal;
}

export interface Correctness {
  exactMatch: boolean;
  judge?: JudgeRecord;
  correct: boolean;
}

/** EM, else one judge call; a failed request throws (the caller decides whether that fails closed or retries). */
export async function judgeCorrectness(
  question: string,
  prediction: string,
  reference: string,
  judge: JudgeCall,
): Promise<Correctness> {
  if (exactMatch(prediction, reference)) return { exactMatch: true, correct: true };
  const messages = judgeMessages(question, prediction, reference);
  const [sample] = await judge.llm.chat({
    role: JUDGE,
    call: judge.call,
    messages,
    n: 1,
    seed: judge.seed,
    temperature: judge.sampling.temperature,
    topP: 1,
    maxTokens: judge.sampling.maxTokens,
    ...(judge.signal ? { signal: judge.signal } : {}),
  });
  const completion = sample?.content ?? '';
  const verdict = parseVerdict(completion);
  return { exactMatch: false, judge: { messages, completion, verdict }, correct: verdict === 'correct' };
}
