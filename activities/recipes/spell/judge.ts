import type { RecipeContext } from '../types';
import { SPELL_CALLS } from '../../clients/llm-protocol';
import { seedOf } from '../../lib/rng';
import { sampledList } from '../../clients/sampled-tokens';
import { extractAnswer, parseVote } from './parse';
import { verifierMessages } from './prompts';
import { ruleCheck } from './rules';
import {
  VERIFIER,
  type JudgedResponse,
  type SpellGated,
  type SpellJudged,
  type SpellSolved,
} from './records';

/**
 * Steps 7–8 (spell.md §1): each response's answer is extracted and rule-checked, and, when it has one, G
 * verifier samples judge it against the reference without the documents. The G requests of a question run
 * concurrently; the unit is stored only when all are done, so a crash redoes at most the unfinished units.
 */
export async function judgeSpell(
  ctx: RecipeContext,
  gated: SpellGated,
  solved: SpellSolved | undefined,
): Promise<SpellJudged> {
  if (!solved) throw new Error(`solve output has no record for unit ${gated.unit} (item ${gated.docIndex})`);
  const { config, iteration } = ctx;
  const question = gated.question;
  if (gated.status !== 'valid' || !question)
    return { unit: gated.unit, docIndex: gated.docIndex, responses: [] };
  const verifier = ctx.llm(VERIFIER);
  const responses = await Promise.all(
    solved.completions.map(async (completion, i): Promise<JudgedResponse> => {
      const answer = extractAnswer(completion);
      const rule = ruleCheck(question, answer);
      if (answer === null || !config.spell.useVerifier) return { answer, rule };
      const messages = verifierMessages(question, answer);
      const samples = await verifier.chat({
        role: VERIFIER,
        call: SPELL_CALLS.verifier,
        messages,
        n: config.groupSize,
        seed: seedOf(config.seed, iteration, 'verify', gated.docIndex, i),
        temperature: config.sampling.temperature,
        topP: config.sampling.topP,
        maxTokens: config.sampling.maxTokens,
        signal: ctx.signal,
      });
      const completions = samples.map((s) => s.content);
      const votes = completions.map(parseVote);
      return { answer, rule, verifier: { messages, completions, votes, ...sampledList(samples) } };
    }),
  );
  return { unit: gated.unit, docIndex: gated.docIndex, responses };
}
