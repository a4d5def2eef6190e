import type { PlanDocument, RecipeContext } from '../types';
import { SPICE_CALLS } from '../../clients/llm-protocol';
import type { SampledTokens } from '../../clients/sampled-tokens';
import { seedOf, seededRng } from '../../lib/rng';
import { freeFormChallengerMessages, mcqChallengerMessages, typeSelectionMessages } from './prompts';
import { parseTypeSelection, type FreeFormType } from './parse';
import { subsampleKeepingRatio } from './subsample';
import { judgeAttempt, type ChallengerRequest } from './validity';
import { CHALLENGER, type SpiceProposal } from './records';

/**
 * The Challenger phase for one document (Algorithm 1, steps 2a–2c): choose the task format, generate
 * attempts in rounds of G until at least one is valid (at most `maxAttempts`), then subsample G of them
 * keeping the attempts' valid:invalid ratio.
 */
export async function proposeSpice(ctx: RecipeContext, doc: PlanDocument): Promise<SpiceProposal> {
  const { config, iteration } = ctx;
  const { groupSize: g, sampling } = config;
  const llm = ctx.llm(CHALLENGER);
  const { request, fallback } = await chooseFormat(ctx, doc);
  const messages =
    request.format === 'mcq'
      ? mcqChallengerMessages(doc.text)
      : freeFormChallengerMessages(doc.text, request.answerType);

  const attempts: Array<{
    completion: string;
    finishReason: string;
    valid: boolean;
    sampled?: SampledTokens;
  }> = [];
  for (let round = 0; attempts.length < config.spice.maxAttempts; round++) {
    const samples = await llm.chat({
      role: CHALLENGER,
      call: request.format === 'mcq' ? SPICE_CALLS.mcq : SPICE_CALLS.freeForm,
      messages,
      n: Math.min(g, config.spice.maxAttempts - attempts.length),
      seed: seedOf(config.seed, iteration, 'challenge', doc.docIndex, round),
      temperature: sampling.temperature,
      topP: sampling.topP,
      maxTokens: sampling.maxTokens,
      signal: ctx.signal,
    });
    for (const s of samples) {
      attempts.push({
        completion: s.content,
        finishReason: s.finishReason,
        ...(s.sampled ? { sampled: s.sampled } : {}),
        valid: judgeAttempt(s.content, s.finishReason, request, {
          refuteArithmetic: config.spice.refuteArithmeticAnswers,
          ...(config.spice.requireAnswerInDocument ? { groundIn: doc.text } : {}),
        }).valid,
      });
    }
    if (attempts.some((a) => a.valid)) break;
  }

  const chosen = subsampleKeepingRatio(
    attempts,
    (a) => a.valid,
    g,
    seededRng(config.seed, iteration, 'subsample', doc.docIndex),
  );
  return {
    unit: doc.unit,
    docIndex: doc.docIndex,
    format: request.format,
    ...(request.format === 'free_form' ? { answerType: request.answerType } : {}),
    typeSelectionFallback: fallback,
    attempts: attempts.length,
    validAttempts: attempts.filter((a) => a.valid).length,
    messages,
    trajectories: chosen.map(({ completion, finishReason, sampled }) => ({
      completion,
      finishReason,
      ...(sampled ? { sampled } : {}),
    })),
  };
}

/**
 * Step 2a, the type-selection helper (not trained: the paper does not say it is). When it fails every try,
 * the format falls back to MCQ (or to a String free-form task when only free-form is allowed); the
 * fallback is counted in the metrics, so a model that cannot follow the helper prompt shows up there.
 */
async function chooseFormat(
  ctx: RecipeContext,
  doc: PlanDocument,
): Promise<{ request: ChallengerRequest; fallback: boolean }> {
  const { config, iteration } = ctx;
  const allowed = config.spice.taskFormats;
  if (allowed === 'mcq') return { request: { format: 'mcq' }, fallback: false };
  const llm = ctx.llm(CHALLENGER);
  for (let attempt = 0; attempt < config.spice.typeSelectionAttempts; attempt++) {
    const [answer] = await llm.chat({
      role: CHALLENGER,
      call: SPICE_CALLS.typeSelection,
      messages: typeSelectionMessages(doc.text),
      n: 1,
      seed: seedOf(config.seed, iteration, 'type', doc.docIndex, attempt),
      temperature: config.sampling.temperature,
      topP: config.sampling.topP,
      maxTokens: Math.min(config.sampling.maxTokens, 512),
      signal: ctx.signal,
    });
    const parsed = parseTypeSelection(answer?.content ?? '');
    if (!parsed.ok) continue;
    if (parsed.format === 'free_form')
      return { request: { format: 'free_form', answerType: parsed.answerType }, fallback: false };
    if (allowed === 'mixed') return { request: { format: 'mcq' }, fallback: false };
  }
  const fallbackType: FreeFormType = 'String';
  return allowed === 'free_form'
    ? { request: { format: 'free_form', answerType: fallbackType }, fallback: true }
    : { request: { format: 'mcq' }, fallback: true };
}
