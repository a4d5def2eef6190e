import type { RecipeContext } from '../types';
import { SSP_CALLS } from '../../clients/llm-protocol';
import { seedOf } from '../../lib/rng';
import { extractQuestion, modelText } from './parse';
import { proposerMessages } from './prompts';
import { searchRollout } from './rollout';
import { PROPOSER, type SspProposal, type SspUnit } from './records';

/**
 * Steps 2–3 (ssp.md §1): one proposer trajectory per answer (n = 1), searching over several turns until it
 * writes `<question>…</question>`; the first question the model itself wrote is extracted (a question tag
 * inside a retrieved document is not the proposer's).
 */
export async function proposeSsp(ctx: RecipeContext, unit: SspUnit): Promise<SspProposal> {
  const { config, iteration } = ctx;
  const messages = proposerMessages(unit.answer, unit.searchTurns, unit.examples);
  const trajectory = await searchRollout(ctx, {
    role: PROPOSER,
    call: SSP_CALLS.proposer,
    messages,
    seed: seedOf(config.seed, iteration, 'propose', unit.docIndex),
    temperature: config.ssp.proposerTemperature,
    finalTag: 'question',
    checkpoint: { unit: unit.unit, name: PROPOSER },
  });
  return {
    unit: unit.unit,
    docIndex: unit.docIndex,
    messages,
    trajectory,
    question: extractQuestion(modelText(trajectory)),
  };
}
