import type { MaeParams } from '../../../config/presets/mae';
import { questionKey } from './pools';
import type { MaeGated, MaePlanUnit, MaeProposal } from './records';

/**
 * Step 3, the quality filter: a question enters D when R_quality ≥ the threshold (0.7), or always when the
 * filter is ablated, unless it is one of `excluded` (`mae.excludeQuestions`). A rejected question still earns
 * its reward. The gate also carries the unit's Solver question and Judge pair on to the solve and judge
 * stages, which see only the gate's records.
 */
export function gateMae(
  params: Pick<MaeParams, 'qualityThreshold' | 'qualityFilter'>,
  plan: readonly MaePlanUnit[],
  proposals: readonly MaeProposal[],
  excluded: ReadonlySet<string> = new Set(),
): MaeGated[] {
  const units = new Map(plan.map((u) => [u.unit, u]));
  return proposals.map((p) => {
    const unit = units.get(p.unit);
    if (!unit) throw new Error(`proposal for unit ${p.unit} has no plan unit`);
    const carried = {
      unit: p.unit,
      docIndex: p.docIndex,
      solverQuestion: unit.solverQuestion,
      ...(unit.judgePair ? { judgePair: unit.judgePair } : {}),
    };
    if (p.question === undefined || p.quality === undefined)
      return { ...carried, accepted: false, rejected: p.invalid ?? 'no_question' };
    if (excluded.has(questionKey(p.question)))
      return { ...carried, question: p.question, accepted: false, rejected: 'excluded' };
    const accepted = !params.qualityFilter || p.quality.value >= params.qualityThreshold;
    return {
      ...carried,
      question: p.question,
      accepted,
      ...(accepted ? {} : { rejected: 'below_threshold' as const }),
    };
  });
}

/** Whether a proposal's question needs N_sample Solver answers: always, unless its difficulty is zeroed. */
export function needsDifficulty(
  params: Pick<MaeParams, 'zeroDifficultyWhenRejected'>,
  gated: MaeGated,
): gated is MaeGated & { question: string } {
  return gated.question !== undefined && (gated.accepted || !params.zeroDifficultyWhenRejected);
}
