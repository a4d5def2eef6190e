import type { RecipeContext } from '../types';
import { SPELL_CALLS } from '../../clients/llm-protocol';
import { seedOf } from '../../lib/rng';
import { sampledList } from '../../clients/sampled-tokens';
import { RESPONDER, type SpellGated, type SpellSolved } from './records';

/** Step 6 (spell.md §1): G responder samples over the whole cluster for every question that passed the gate. */
export async function solveSpell(ctx: RecipeContext, gated: SpellGated): Promise<SpellSolved> {
  const { config, iteration } = ctx;
  const head = { unit: gated.unit, docIndex: gated.docIndex };
  if (gated.status !== 'valid' || !gated.responderMessages) return { ...head, completions: [] };
  const samples = await ctx.llm(RESPONDER).chat({
    role: RESPONDER,
    call: SPELL_CALLS.responder,
    messages: gated.responderMessages,
    n: config.groupSize,
    seed: seedOf(config.seed, iteration, 'respond', gated.docIndex),
    temperature: config.sampling.temperature,
    topP: config.sampling.topP,
    maxTokens: config.sampling.maxTokens,
    signal: ctx.signal,
  });
  return { ...head, completions: samples.map((s) => s.content), ...sampledList(samples) };
}
