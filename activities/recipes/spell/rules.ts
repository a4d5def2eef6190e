import { coverExactMatch } from '../../scoring/cover-exact-match';
import { numbersMatch, parseNumber } from '../../scoring/numeric-answer';
import { extractChoiceLetter } from '../../scoring/verifiers';
import type { SpellQuestion } from './records';

/**
 * R_rule ∈ {0, 1} (spell.md §1.7), the strict check of an extracted answer against the reference: CEM for
 * general QA, DocMath's 0.15% tolerance (with scale equivalences) for financial math, the letter for MC.
 * No answer is never right. The grounding probe passes exactly when this does.
 */
export function ruleCheck(q: SpellQuestion, predicted: string | null): boolean {
  if (predicted === null) return false;
  switch (q.task) {
    case 'general_qa':
      return coverExactMatch(predicted, q.answer);
    case 'financial_math': {
      const [p, g] = [parseNumber(predicted), parseNumber(q.answer)];
      return p !== undefined && g !== undefined && numbersMatch(p, g);
    }
    case 'multiple_choice': {
      const letter = extractChoiceLetter(predicted);
      return letter !== undefined && letter === q.answer;
    }
  }
}
