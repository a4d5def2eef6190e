import type { RecipeContext } from '../types';
import { MAE_CALLS } from '../../clients/llm-protocol';
import { generate, generationOf, judgeScoreOf } from './calls';
import { extractQuestion } from './parse';
import { judgeQuestionMessages, proposerMessages } from './prompts';
import { PROPOSER, type MaePlanUnit, type MaeProposal } from './records';

/**
 * Steps 1 and 2a for one unit: the Proposer writes one completion (L3 with the unit's reference, L2 without),
 * the last `<question>` is extracted, and the Judge scores it with L5. The quality call is made here, on the
 * rollout pool, because the gate stage runs on the orchestrator pool; the gate applies the threshold.
 */
export async function proposeMae(ctx: RecipeContext, unit: MaePlanUnit): Promise<MaeProposal> {
  const messages = proposerMessages(unit.reference);
  const [sample] = await generate(
    ctx,
    PROPOSER,
    MAE_CALLS.proposer,
    messages,
    1,
    'mae-propose',
    unit.docIndex,
  );
  const proposer = generationOf(messages, sample);
  const extracted = extractQuestion(proposer.completion);
  const base = { unit: unit.unit, docIndex: unit.docIndex, proposer };
  if (!extracted.ok) return { ...base, invalid: extracted.reason };
  const quality = await judgeScoreOf(
    ctx,
    MAE_CALLS.judgeQuestion,
    judgeQuestionMessages(extracted.question),
    'mae-quality',
    unit.docIndex,
  );
  return { ...base, question: extracted.question, quality };
}
