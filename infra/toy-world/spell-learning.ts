/**
 * What a SPELL toy-world run's curve reads per iteration besides the run's own figures (learning.ts): the
 * verifier's agreement with the rule check, the responder's pass rate on the questioner's valid questions,
 * and how many groups of each role the step composed.
 */
import type { PointReader } from './learning';
import { meanPassRate } from './learning';

export interface SpellPoint {
  /** The share of the verifier's judgments that say what the rule check says (the filter's metric). */
  verifierRuleAgreement: number;
  /** The responder's mean reward over the questioner's valid questions (from the pass-rate histogram). */
  responderPassRate: number;
  /** Questions with G responses of unequal rewards, the responder groups trained, the verifier groups trained. */
  solvableQuestions: number;
  responderGroups: number;
  verifierGroups: number;
}

export const spellPoint: PointReader<SpellPoint> = ({ manifest }) => {
  const { passRateHistogram, extra = {} } = manifest.metrics.recipe;
  return {
    verifierRuleAgreement: extra['verifierRuleAgreement'] ?? 0,
    responderPassRate: meanPassRate(passRateHistogram),
    solvableQuestions: extra['solvableQuestions'] ?? 0,
    responderGroups: extra['responderGroups'] ?? 0,
    verifierGroups: extra['verifierGroups'] ?? 0,
  };
};
