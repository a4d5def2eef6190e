/**
 * SSP's toy world, per iteration (a `PointReader` for `readLearningCurve`): how many of the proposer's
 * questions passed RAG verification and how many of those ask two hops, how often the solver answered them,
 * and how much both roles searched. The held-out accuracy (agentic evaluation) is the run's own figure, broken
 * down by the questions' hops (`sspHeldOutScore`).
 */
import type { SspGated, SspSolved } from '../../activities/recipes/ssp/records';
import {
  heldOutQuestions,
  mean,
  meanPassRate,
  stageRecords,
  storedItems,
  type HeldOutScore,
  type PointReader,
} from './learning';
import { parseQuestion } from './ssp-world';

export interface SspPoint {
  /** The proposer's questions that passed the rule filter, and those that also passed RAG verification. */
  ruleValid: number;
  ragVerified: number;
  /** Share of the verified questions that ask two hops (the world's two-hop template). */
  twoHopShare: number;
  /** The solver's mean success on the verified questions (its G answers each, from the histogram). */
  solverPassRate: number;
  /** Mean searches per proposer trajectory and per solver trajectory. */
  proposerSearches: number;
  solverSearches: number;
}

export const sspPoint: PointReader<SspPoint> = async ({ store, runId, iteration, manifest }) => {
  const { passRateHistogram, extra = {} } = manifest.metrics.recipe;
  const [gated, solved] = await Promise.all([
    stageRecords<SspGated>(store, runId, iteration, 'gate'),
    stageRecords<SspSolved>(store, runId, iteration, 'solve'),
  ]);
  // Units are numbered within their shard; the answer's index in the plan names it across shards.
  const verified = new Set(solved.filter((s) => s.verification?.passed).map((s) => s.docIndex));
  const hops = gated
    .filter((g) => verified.has(g.docIndex))
    .map((g) => parseQuestion(g.question ?? '')?.hops);
  return {
    ruleValid: extra['ruleValid'] ?? 0,
    ragVerified: extra['ragVerified'] ?? 0,
    twoHopShare: hops.length ? hops.filter((h) => h === 2).length / hops.length : 0,
    solverPassRate: meanPassRate(passRateHistogram),
    proposerSearches: extra['meanProposerSearches'] ?? 0,
    solverSearches: extra['meanSolverSearches'] ?? 0,
  };
};

/**
 * SSP's held-out figure: the evaluation's own accuracy, and its accuracy per hop count of the question
 * (`1-hop`, `2-hop`) from the stored items, since a two-hop question needs a second search that a one-hop
 * one does not. `heldOut` is the world's held-out file.
 */
export function sspHeldOutScore(heldOut: string): HeldOutScore {
  const questions = heldOutQuestions(heldOut);
  return async (store, result) => {
    const byHops: Record<string, number[]> = {};
    for (const item of await storedItems(store, result)) {
      const hops = parseQuestion(questions.get(item.id) ?? '')?.hops;
      if (hops === undefined) throw new Error(`held-out item ${item.id} is not a question of ${heldOut}`);
      (byHops[`${hops}-hop`] ??= []).push(mean(item.samples.map((s) => (s.correct ? 1 : 0))));
    }
    return {
      accuracy: result.accuracy,
      standardError: result.standardError ?? 0,
      byKind: Object.fromEntries(Object.entries(byHops).map(([kind, scores]) => [kind, mean(scores)])),
    };
  };
}
