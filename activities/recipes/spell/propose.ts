import type { RecipeContext } from '../types';
import { SPELL_CALLS } from '../../clients/llm-protocol';
import { seedOf } from '../../lib/rng';
import { EMPTY_CONTEXT, joinDocuments, questionerMessages, responderMessages } from './prompts';
import { extractAnswer, parseQuestioner } from './parse';
import { ruleCheck } from './rules';
import { QUESTIONER, RESPONDER, type SpellProposal, type SpellUnit } from './records';

/**
 * Steps 3–5 (spell.md §1): one questioner sample over the unit's context, parsed into a typed outcome, then
 * the grounding probe: one responder sample with the documents replaced by "Empty". A question the probe
 * answers right (rule check) needs no documents, and the gate drops it. The probe runs here, on the rollout
 * pool with the other LLM calls of the unit, so the gate stays CPU work.
 */
export async function proposeSpell(ctx: RecipeContext, unit: SpellUnit): Promise<SpellProposal> {
  const { config, iteration } = ctx;
  const { sampling } = config;
  const chosen = new Set(unit.questionerDocs);
  const messages = questionerMessages(
    unit.task,
    joinDocuments(unit.documents.filter((d) => chosen.has(d.id))),
    unit.examples,
    unit.targetLetter,
  );
  const sample = { temperature: sampling.temperature, topP: sampling.topP, maxTokens: sampling.maxTokens };
  const [questioner] = await ctx.llm(QUESTIONER).chat({
    role: QUESTIONER,
    call: SPELL_CALLS.questioner,
    messages,
    n: 1,
    seed: seedOf(config.seed, iteration, 'question', unit.docIndex),
    ...sample,
    signal: ctx.signal,
  });
  const completion = questioner?.content ?? '';
  const outcome = parseQuestioner(completion, unit.task, config.spell.maxAnswerTokens);
  const sampled = questioner?.sampled ? { sampled: questioner.sampled } : {};
  const base = { unit: unit.unit, docIndex: unit.docIndex, messages, completion, ...sampled, outcome };
  if (outcome.kind !== 'question' || !config.spell.groundingFilter) return base;

  const [probe] = await ctx.llm(RESPONDER).chat({
    role: RESPONDER,
    call: SPELL_CALLS.grounding,
    messages: responderMessages(outcome.question, EMPTY_CONTEXT),
    n: 1,
    seed: seedOf(config.seed, iteration, 'grounding', unit.docIndex),
    ...sample,
    signal: ctx.signal,
  });
  const answer = extractAnswer(probe?.content ?? '');
  return {
    ...base,
    grounding: {
      completion: probe?.content ?? '',
      answer,
      passed: ruleCheck(outcome.question, answer),
    },
  };
}
