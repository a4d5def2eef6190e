import type { ChatSample } from '../../clients/inference';
import type { ChatMessage } from '../../clients/trainer-contract';
import { seedOf } from '../../lib/rng';
import { askScoreJudge, type JudgeScore } from '../../judges/score';
import type { RecipeContext } from '../types';
import { JUDGE, type Generation } from './records';

/**
 * MAE's LLM calls. Every call, reward-only ones included, samples with the run's settings (spec §1: all
 * calls use the current θ, T = 1.0, top-p 1.0), and its seed comes from (run seed, iteration, what, unit, …),
 * so a retried unit sends the same requests.
 */
export function generate(
  ctx: RecipeContext,
  role: string,
  call: string,
  messages: ChatMessage[],
  n: number,
  ...seedParts: Array<string | number>
): Promise<ChatSample[]> {
  return ctx.llm(role).chat({ role, call, messages, n, ...sampling(ctx, seedParts) });
}

/** A trained generation as its row needs it: the prompt, the first sample's text, finish reason and ids. */
export function generationOf(messages: ChatMessage[], sample: ChatSample | undefined): Generation {
  return {
    messages,
    completion: sample?.content ?? '',
    finishReason: sample?.finishReason ?? 'unknown',
    ...(sample?.sampled ? { sampled: sample.sampled } : {}),
  };
}

/** One reward-only judgement by the judge endpoint (the policy unless `inference.roles.judge` says otherwise). */
export function judgeScoreOf(
  ctx: RecipeContext,
  call: string,
  messages: ChatMessage[],
  ...seedParts: Array<string | number>
): Promise<JudgeScore> {
  return askScoreJudge(
    ctx.llm(JUDGE),
    { role: JUDGE, call, messages, ...sampling(ctx, seedParts) },
    ctx.config.mae.scoreMapping,
  );
}

function sampling(ctx: RecipeContext, seedParts: Array<string | number>) {
  const { config, iteration, signal } = ctx;
  return {
    seed: seedOf(config.seed, iteration, ...seedParts),
    temperature: config.sampling.temperature,
    topP: config.sampling.topP,
    maxTokens: config.sampling.maxTokens,
    signal,
  };
}
