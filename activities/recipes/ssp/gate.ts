import type { RecipeContext } from '../types';
import { seededRng } from '../../lib/rng';
import { drawReplacement, readState } from './pool';
import { ragVerifierMessages } from './prompts';
import { ruleFilter } from './rules';
import { buildMaterials, joinInformation } from './verification';
import type { SspGated, SspProposal, SspUnit } from './records';

/**
 * Steps 3–5 (ssp.md §1) without the LLM: the rule filter, and for each question that passes it the RAG
 * verifier's prompt, whose noise blocks are other trajectories of this shard (a shard is a seeded subset of
 * the batch, so its trajectories are the batch's in miniature; a shard needs noiseBlocks + 1 trajectories
 * with information for the full noise). The verification call itself runs on the rollout pool at the start
 * of solve, stored per unit. Each unit also gets its replacement from the committed replay pool, drawn now
 * so that every retry draws the same one; solve uses it if the slot ends up invalid.
 */
export function gateSsp(ctx: RecipeContext, plan: SspUnit[], proposals: SspProposal[]): SspGated[] {
  const { config, iteration } = ctx;
  const p = config.ssp;
  const state = readState(ctx.state);
  const units = new Map(plan.map((u) => [u.unit, u]));
  const blocks = proposals.map((pr) => pr.trajectory.information);
  return proposals.map((proposal, i): SspGated => {
    const unit = units.get(proposal.unit);
    if (!unit) throw new Error(`gate: proposal for unit ${proposal.unit} has no plan unit`);
    const replacement = drawReplacement(
      state,
      p.replay,
      seededRng(config.seed, iteration, 'replay', unit.docIndex),
    );
    const head = {
      unit: unit.unit,
      docIndex: unit.docIndex,
      answer: unit.answer,
      ...(replacement ? { replacement } : {}),
    };
    const reason = ruleFilter(
      {
        question: proposal.question,
        answer: unit.answer,
        searchTurns: unit.searchTurns,
        searches: proposal.trajectory.searches,
        informationBlocks: proposal.trajectory.information.length,
      },
      p.rules,
    );
    const question = proposal.question;
    if (reason !== undefined || question === null)
      return { ...head, rule: { passed: false, reason: reason ?? 'no_question' } };
    if (!p.ragVerification) return { ...head, question, rule: { passed: true } };
    const others = blocks.flatMap((b, j) => (j !== i && b.length > 0 ? [joinInformation(b)] : []));
    const materials = buildMaterials(
      proposal.trajectory.information,
      others,
      p.noiseBlocks,
      seededRng(config.seed, iteration, 'rag-noise', unit.docIndex),
    );
    return {
      ...head,
      question,
      rule: { passed: true },
      verifierMessages: ragVerifierMessages(materials, question),
    };
  });
}
