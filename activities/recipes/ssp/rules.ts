import { coverExactMatch } from '../../scoring/cover-exact-match';
import type { SspParams } from '../../../config/presets/ssp';
import type { RuleFailure } from './records';

/**
 * The rule filter (ssp.md §1.4, the released code's exact rules): a question of 10–1000 characters and at
 * least 10 words, that does not contain the answer, written after at least one `<information>` block and at
 * least 2 searches, none repeated (optionally at least n). The checks run in that order and the first failure is the reason.
 */

export interface RuleInput {
  question: string | null;
  answer: string;
  /** n: the searches the proposer was asked for. */
  searchTurns: number;
  searches: readonly string[];
  informationBlocks: number;
}

/**
 * The answer is "inside" a text when `coverExactMatch(text, answer)`: its normalised form (SQuAD's: lower
 * case, no punctuation or articles) is a substring of the text's. The code compares lower-cased raw strings;
 * normalising both also catches "Paris," or "THE Beatles", and, as a substring test, it stays as strict as the code's.
 */

/** Queries are the same when equal after lower-casing and collapsing whitespace. */
const queryKey = (q: string): string => q.toLowerCase().split(/\s+/).filter(Boolean).join(' ');

export function ruleFilter(input: RuleInput, rules: SspParams['rules']): RuleFailure | undefined {
  const q = input.question?.trim() ?? '';
  if (q === '') return 'no_question';
  const chars = [...q].length;
  if (chars < rules.minChars) return 'too_short';
  if (chars > rules.maxChars) return 'too_long';
  if (q.split(/\s+/).length < rules.minWords) return 'too_few_words';
  if (coverExactMatch(q, input.answer)) return 'answer_in_question';
  if (input.informationBlocks < 1) return 'no_information';
  if (input.searches.length < rules.minSearches) return 'too_few_searches';
  if (new Set(input.searches.map(queryKey)).size < input.searches.length) return 'repeated_query';
  if (rules.requireSearchTurns && input.searches.length < input.searchTurns) return 'fewer_searches_than_n';
  if (rules.banAnswerInQueries && input.searches.some((s) => coverExactMatch(s, input.answer)))
    return 'answer_in_query';
  return undefined;
}
