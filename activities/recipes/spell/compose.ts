import type { Rng } from '../../lib/rng';
import type { SpellTask } from './records';
import { hasSpread } from './rewards';

/**
 * Role-specific dynamic sampling (spell.md §4): of 1 questioner, G responder and G² verifier samples per
 * question, about 1/G are trained, so the verifier cannot drown the responder.
 */

/** A question's rewards, as the filter scored them; discarded questions are not items. */
export interface ScoredItem {
  docIndex: number;
  task: SpellTask;
  status: 'valid' | 'bad_format' | 'bad_ground';
  questionerReward: number;
  /** The G responder rewards (valid questions only). */
  responderRewards: number[];
  /** One group per response with an answer the verifier judged. */
  verifierGroups: VerifierGroup[];
}

export interface VerifierGroup {
  response: number;
  rewards: number[];
  /** Share of the G judgments equal to the majority. */
  agreement: number;
  /** The majority equals R_rule (`maj_cons`). */
  consistent: boolean;
}

export interface CompositionOptions {
  /** N. */
  responderGroups: number;
  verifierRatio: number;
  agreement: { min: number; max: number };
  consistency: boolean;
}

export interface Composition {
  responder: ScoredItem[];
  questioner: ScoredItem[];
  verifier: Array<{ item: ScoredItem; group: VerifierGroup }>;
  /** Questions with std(r_res) > 0, before truncation to N. */
  solvable: number;
  verifierCandidates: number;
  /** ⌊responder trajectories × ratio / G⌋; no verifier group is trained when fewer candidates exist. */
  verifierTarget: number;
}

/**
 * - Responder: the first N valid questions (plan order) whose G rewards are not all equal.
 * - Questioner: those questions as positives, and per task as many negatives (bad format, ungrounded, or
 *   valid with zero variance) as that task has positives, or all it has (stratified to the task mix, §4).
 * - Verifier: groups whose majority agrees with the rule (unless the consistency filter is off) and whose
 *   agreement lies in [min, max], i.e. not unanimous; ⌊N·G·ratio / G⌋ of them at random, none if fewer exist.
 * Random choices come from `rng` only, so a retried filter composes the same batch.
 */
export function composeBatch(
  items: readonly ScoredItem[],
  options: CompositionOptions,
  rng: Rng,
): Composition {
  const ordered = [...items].sort((a, b) => a.docIndex - b.docIndex);
  const solvable = ordered.filter((q) => q.status === 'valid' && hasSpread(q.responderRewards));
  const responder = solvable.slice(0, options.responderGroups);

  const negativePool = ordered.filter((q) => q.status !== 'valid' || !hasSpread(q.responderRewards));
  const negatives = [...new Set(responder.map((q) => q.task))].flatMap((task) =>
    rng.sample(
      negativePool.filter((q) => q.task === task),
      responder.filter((q) => q.task === task).length,
    ),
  );
  const questioner = [...responder, ...negatives].sort((a, b) => a.docIndex - b.docIndex);

  const { min, max } = options.agreement;
  const candidates = ordered.flatMap((item) =>
    item.verifierGroups
      .filter((g) => (!options.consistency || g.consistent) && g.agreement >= min && g.agreement <= max)
      .map((group) => ({ item, group })),
  );
  // (N·G trajectories) × ratio / G groups.
  const verifierTarget = Math.floor(responder.length * options.verifierRatio);
  const verifier =
    candidates.length >= verifierTarget && verifierTarget > 0
      ? rng
          .sample(candidates, verifierTarget)
          .sort((a, b) => a.item.docIndex - b.item.docIndex || a.group.response - b.group.response)
      : [];
  return {
    responder,
    questioner,
    verifier,
    solvable: solvable.length,
    verifierCandidates: candidates.length,
    verifierTarget,
  };
}
