import type { LlmCaller } from '../../clients/inference';
import type { ChatMessage } from '../../clients/trainer-contract';
import type { SspParams } from '../../../config/presets/ssp';
import type { Rng } from '../../lib/rng';
import { judgeCorrectness, type JudgeCall } from './correctness';
import { extractRagAnswer } from './parse';
import { VERIFIER, type Verification } from './records';

/**
 * RAG verification (ssp.md §1.5): a question passes only if a model, given the proposer's own retrieved
 * documents mixed with noise and no search tool, reproduces the ground truth. It is a rejection filter,
 * never trained on. Both pitfalls of the released code are closed here: a call that fails, or an output
 * without an answer, is a failed verification (the code passed on exceptions), and the judge's verdict is
 * read strictly (the code read "Incorrect" as correct).
 */

/** A trajectory's `<information>` blocks joined into one block (§1.5 [C]). */
export const joinInformation = (blocks: readonly string[]): string => blocks.join('\n');

/**
 * The materials: the trajectory's own joined block plus `noiseBlocks` other trajectories' joined blocks,
 * drawn without replacement from `others`, shuffled together and joined with blank lines. Fewer others than
 * asked gives fewer noise blocks (a small shard); the draw and the order come from `rng` (seeded per unit).
 */
export function buildMaterials(
  own: readonly string[],
  others: readonly string[],
  noiseBlocks: number,
  rng: Rng,
): string {
  const noise = rng.sample(others, noiseBlocks);
  return rng.shuffle([joinInformation(own), ...noise]).join('\n\n');
}

export interface VerifyRequest {
  llm: LlmCaller;
  call: string;
  messages: ChatMessage[];
  question: string;
  groundTruth: string;
  seed: number;
  sampling: SspParams['verifier'];
  judge: JudgeCall;
  signal?: AbortSignal;
}

/** One RAG answer, EM then the judge; every error is a failed verification, except a cancelled activity. */
export async function verifyQuestion(req: VerifyRequest): Promise<Verification> {
  let completion = '';
  try {
    const [sample] = await req.llm.chat({
      role: VERIFIER,
      call: req.call,
      messages: req.messages,
      n: 1,
      seed: req.seed,
      temperature: req.sampling.temperature,
      topP: 1,
      maxTokens: req.sampling.maxTokens,
      ...(req.signal ? { signal: req.signal } : {}),
    });
    completion = sample?.content ?? '';
    const answer = extractRagAnswer(completion);
    if (answer === null)
      return { completion, answer, exactMatch: false, passed: false, failure: 'unparseable' };
    const c = await judgeCorrectness(req.question, answer, req.groundTruth, req.judge);
    return {
      completion,
      answer,
      exactMatch: c.exactMatch,
      ...(c.judge ? { judge: c.judge } : {}),
      passed: c.correct,
      ...(c.correct ? {} : { failure: c.judge?.verdict === 'unparseable' ? 'unparseable' : 'wrong_answer' }),
    };
  } catch (err) {
    // A cancelled or timed-out activity must stop, not record a verdict it never reached.
    if (req.signal?.aborted) throw err;
    return {
      completion,
      answer: null,
      exactMatch: false,
      passed: false,
      failure: 'error',
      error: err instanceof Error ? err.message : String(err),
    };
  }
}
