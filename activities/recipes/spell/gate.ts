import { approxTokens } from '../../scoring/tokens';
import { joinDocuments, responderMessages } from './prompts';
import type { SpellGated, SpellProposal, SpellUnit } from './records';

/**
 * The grounding filter's verdicts (spell.md §1.5–1.6), applied without the LLM: a question the no-document
 * probe answered right is `bad_ground`; a valid one gets its responder prompt over the whole cluster, unless
 * that prompt exceeds `maxPromptTokens` (the code's 18,000), which skips the question.
 */
export function gateSpell(
  plan: SpellUnit[],
  proposals: SpellProposal[],
  maxPromptTokens: number,
): SpellGated[] {
  const units = new Map(plan.map((u) => [u.unit, u]));
  return proposals.map((p): SpellGated => {
    const unit = units.get(p.unit);
    if (!unit) throw new Error(`gate: proposal for unit ${p.unit} has no plan unit`);
    const head = { unit: p.unit, docIndex: p.docIndex, task: unit.task };
    const { outcome } = p;
    if (outcome.kind !== 'question') return { ...head, status: outcome.kind, reason: outcome.reason };
    if (p.grounding?.passed) return { ...head, status: 'bad_ground', reason: 'answered_without_documents' };
    const responder = responderMessages(outcome.question, joinDocuments(unit.documents));
    if (approxTokens(responder.map((m) => m.content).join('\n')) > maxPromptTokens)
      return { ...head, status: 'discarded', reason: 'prompt_too_long' };
    return { ...head, status: 'valid', question: outcome.question, responderMessages: responder };
  });
}
