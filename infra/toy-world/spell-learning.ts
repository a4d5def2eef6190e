/**
 * What a SPELL toy-world run's curve reads per iteration besides the run's own figures (learning.ts): the
 * verifier's agreement with the rule check, overall and on right and wrong answers apart, the responder's pass
 * rate on the questioner's valid questions, the questioner's context, and how many groups of each role the step
 * composed.
 */
import type { SpellJudged } from '../../activities/recipes/spell/records';
import type { PointReader } from './learning';
import { agreement, meanPassRate, stageRecords, type Agreement } from './learning';

export interface SpellPoint {
  /** The share of the verifier's judgments that say what the rule check says (the filter's metric). */
  verifierRuleAgreement: number;
  /**
   * The same on the answers the rule passes and on those it fails, apart. The overall share moves with the
   * mix: the verifier says [[YES]] to a right answer more reliably than [[NO]] to a wrong one, so a responder
   * that writes more right answers raises it with no change in the verifier. Each of these does not.
   */
  verifierAgreementOnRight: Agreement;
  verifierAgreementOnWrong: Agreement;
  /** The responder's mean reward over the questioner's valid questions (from the pass-rate histogram). */
  responderPassRate: number;
  /**
   * The questioner's context: its mean number of documents, and the items whose prompt is the with-history
   * template (the cluster's history memory held an entry). The memory widens the context by `newDocuments` a
   * solved question, up to the cluster's size.
   */
  questionerDocuments: number;
  withHistoryItems: number;
  /** Questions with G responses of unequal rewards, the responder groups trained, the verifier groups trained. */
  solvableQuestions: number;
  responderGroups: number;
  verifierGroups: number;
}

export const spellPoint: PointReader<SpellPoint> = async ({ store, runId, iteration, manifest }) => {
  const { passRateHistogram, extra = {} } = manifest.metrics.recipe;
  const judged = await stageRecords<SpellJudged>(store, runId, iteration, 'judge');
  const votes = judged.flatMap((j) =>
    j.responses.flatMap(({ rule, verifier }) =>
      (verifier?.votes ?? []).map((vote) => ({ rule, agrees: vote === (rule ? 1 : 0) })),
    ),
  );
  return {
    verifierRuleAgreement: extra['verifierRuleAgreement'] ?? 0,
    verifierAgreementOnRight: agreement(votes.filter((v) => v.rule)),
    verifierAgreementOnWrong: agreement(votes.filter((v) => !v.rule)),
    responderPassRate: meanPassRate(passRateHistogram),
    questionerDocuments: extra['meanQuestionerDocuments'] ?? 0,
    withHistoryItems: extra['withHistoryItems'] ?? 0,
    solvableQuestions: extra['solvableQuestions'] ?? 0,
    responderGroups: extra['responderGroups'] ?? 0,
    verifierGroups: extra['verifierGroups'] ?? 0,
  };
};
