import { ruleFilter, type RuleInput } from '../../../activities/recipes/ssp/rules';
import { coverExactMatch } from '../../../activities/scoring/cover-exact-match';
import { SSP_DEFAULTS } from '../../../config/presets/ssp';

const RULES = SSP_DEFAULTS.rules;
const GOOD = 'Which river town was founded by the cartographer who was born in Tessing in 1598?';
const base: RuleInput = {
  question: GOOD,
  answer: 'Velmora',
  searchTurns: 3,
  searches: ['Velmora founder', 'Ilse Marrow birthplace'],
  informationBlocks: 2,
};

describe('SSP rule filter (ssp.md §1.4)', () => {
  test('a good question passes', () => {
    expect(ruleFilter(base, RULES)).toBeUndefined();
  });

  test.each<[string, Partial<RuleInput>, string]>([
    ['no question', { question: null }, 'no_question'],
    ['an empty question', { question: '   ' }, 'no_question'],
    ['9 characters', { question: 'a b c d e' }, 'too_short'],
    ['1001 characters', { question: `${'word '.repeat(200)}x`.padEnd(1001, 'y') }, 'too_long'],
    ['9 words', { question: 'Which town was founded by the famous old cartographer?' }, 'too_few_words'],
    ['the answer inside, another case', { question: `${GOOD} Is it VELMORA?` }, 'answer_in_question'],
    ['the answer inside, with punctuation', { question: `${GOOD} (velmora)` }, 'answer_in_question'],
    ['no information block', { informationBlocks: 0 }, 'no_information'],
    ['one search', { searches: ['Velmora founder'] }, 'too_few_searches'],
    ['no search', { searches: [] }, 'too_few_searches'],
    ['a repeated query', { searches: ['Ilse Marrow', 'ilse   marrow', 'x'] }, 'repeated_query'],
  ])('%s → %s', (_, patch, reason) => {
    expect(ruleFilter({ ...base, ...patch }, RULES)).toBe(reason);
  });

  test('exactly at the bounds: 10 characters and 10 words pass; 1000 characters pass', () => {
    const tenWords = 'a b c d e f g h i j';
    expect(ruleFilter({ ...base, question: tenWords }, RULES)).toBeUndefined();
    const thousand = `${'abcd '.repeat(199)}abcd`;
    expect([...thousand].length).toBe(999);
    expect(ruleFilter({ ...base, question: `${thousand}e` }, RULES)).toBeUndefined();
  });

  test('the answer in a query is allowed unless banAnswerInQueries (off by default, as in the code)', () => {
    const input = { ...base, searches: ['Velmora', 'Ilse Marrow'] };
    expect(ruleFilter(input, RULES)).toBeUndefined();
    expect(ruleFilter(input, { ...RULES, banAnswerInQueries: true })).toBe('answer_in_query');
  });

  test('n is enforced only with requireSearchTurns (the code never checks it; off by default)', () => {
    expect(ruleFilter(base, RULES)).toBeUndefined();
    expect(ruleFilter(base, { ...RULES, requireSearchTurns: true })).toBe('fewer_searches_than_n');
    expect(ruleFilter({ ...base, searchTurns: 2 }, { ...RULES, requireSearchTurns: true })).toBeUndefined();
  });

  test('coverExactMatch: normalised substring; an answer that normalises to nothing is never contained', () => {
    expect(coverExactMatch('The Beatles were a band', 'the beatles')).toBe(true);
    expect(coverExactMatch('Founded in 1,621', '1621')).toBe(true);
    expect(coverExactMatch('anything', 'the')).toBe(false);
  });
});
