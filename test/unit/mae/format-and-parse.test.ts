import { formatReward, tagContents } from '../../../activities/scoring/tags';
import { answerForJudge, extractQuestion } from '../../../activities/recipes/mae/parse';
import { proposerMessages } from '../../../activities/recipes/mae/prompts';

describe('format reward (MAE §2.2): 1 / 0.5 / 0 for one / several / no valid tag pair', () => {
  test.each([
    ['exactly one pair', 'Thinking first.\n<question>\nWhat is 2+3?\n</question>', 'question', 1],
    ['one pair, upper-case tags', '<QUESTION>What is 2+3?</QUESTION>', 'question', 1],
    ['two pairs', '<question>draft</question> then <question>final</question>', 'question', 0.5],
    ['three pairs', '<answer>1</answer><answer>2</answer><answer>3</answer>', 'answer', 0.5],
    ['no pair', 'The answer is 5.', 'answer', 0],
    ['an opening tag only', '<answer>5', 'answer', 0],
    ['a closing tag before the opening one', '</answer>5<answer>', 'answer', 0],
    ['an empty pair is not valid', '<answer>   </answer>', 'answer', 0],
    ['one empty and one valid pair', '<score></score><score>7</score>', 'score', 1],
    ['nested opening tags count once', '<score>a<score>7</score>', 'score', 1],
    ['the other role’s tag does not count', '<answer>5</answer>', 'question', 0],
    ['an empty generation (decided: 0, as the paper; the reference code gives 0.5)', '', 'score', 0],
  ])('%s', (_name, text, tag, expected) => {
    expect(formatReward(text, tag)).toBe(expected);
  });

  test('counts only the generated text: the prompt’s own tag mentions never reach it', () => {
    const prompt = proposerMessages(undefined)[0]?.content ?? '';
    // The L2 template mentions <question> three times and holds one full pair; a count over prompt + output
    // would be offset, which is the reference code's bug the spec says not to copy.
    expect(tagContents(prompt, 'question')).toHaveLength(2);
    expect(formatReward('<question>What is 7*6?</question>', 'question')).toBe(1);
  });

  test('tag names are checked', () => {
    expect(() => tagContents('x', 'a|b')).toThrow(RangeError);
  });
});

describe('question extraction: the last <question> pair', () => {
  test.each([
    [
      'one question',
      'Plan.\n<question>\n  What is 7*6?  \n</question>',
      { ok: true, question: 'What is 7*6?' },
    ],
    [
      'the last of several',
      '<question>draft</question>\n<question>final</question>',
      { ok: true, question: 'final' },
    ],
    ['no pair', 'What is 7*6?', { ok: false, reason: 'no_question' }],
    [
      'an empty last pair',
      '<question>real</question><question> </question>',
      { ok: false, reason: 'empty_question' },
    ],
    [
      'the template placeholder left in place',
      '<question>\n[Your generated question here]\n</question>',
      { ok: false, reason: 'placeholder' },
    ],
  ])('%s', (_name, text, expected) => {
    expect(extractQuestion(text)).toEqual(expected);
  });
});

describe('what the Judge is shown of a Solver output', () => {
  test.each([
    ['the last <answer> content', 'Steps...\n<answer> 42 </answer>', '42'],
    ['the last of several', '<answer>41</answer> no wait <answer>42</answer>', '42'],
    ['the whole output when there is no tag', '  The answer is 42.  ', 'The answer is 42.'],
    [
      'the whole output when the last tag is empty',
      'It is 42 <answer></answer>',
      'It is 42 <answer></answer>',
    ],
    ['nothing for an empty output', '', ''],
  ])('%s', (_name, text, expected) => {
    expect(answerForJudge(text)).toBe(expected);
  });
});
