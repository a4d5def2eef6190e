import {
  afterThinking,
  extractAnswer,
  parseQuestioner,
  parseVote,
} from '../../../activities/recipes/spell/parse';

const fenced = (value: unknown): string =>
  `Reasoning first.\n\n\`\`\`json\n${JSON.stringify(value, null, 2)}\n\`\`\``;

describe('questioner output (§1.4)', () => {
  test('keeps the text after the last </think>; an unclosed <think> is discarded', () => {
    expect(afterThinking('<think>a</think>b<think>c</think>d')).toBe('d');
    expect(afterThinking('plain')).toBe('plain');
    expect(afterThinking('<think>never closed')).toBeUndefined();
    expect(parseQuestioner('<think>still thinking {"question": "x"', 'general_qa', 40)).toEqual({
      kind: 'discarded',
      reason: 'unclosed_think',
    });
  });

  test('takes the last ```json block, ignoring JSON inside the thinking', () => {
    const text =
      '<think>```json\n{"question": "draft", "answer": "no"}\n```</think>' +
      fenced({ question: 'first', answer: 'one' }) +
      fenced({ question: 'Where is X?', answer: 'Velmont' });
    expect(parseQuestioner(text, 'general_qa', 40)).toEqual({
      kind: 'question',
      question: { task: 'general_qa', question: 'Where is X?', answer: 'Velmont' },
    });
  });

  test('without a block, the whole text must be the JSON; the paper example’s trailing comma is tolerated', () => {
    expect(parseQuestioner('{"question": "Q?", "answer": "A",\n}', 'general_qa', 40)).toMatchObject({
      kind: 'question',
    });
    expect(parseQuestioner('Here it is: {"question": "Q?", "answer": "A"}', 'general_qa', 40)).toEqual({
      kind: 'bad_format',
      reason: 'no_json',
    });
  });

  test.each([
    ['no JSON at all', 'I could not write a question.', 'no_json'],
    ['a JSON list', fenced(['Q?', 'A']), 'no_json'],
    ['no question', fenced({ answer: 'A' }), 'missing_question'],
    ['a numeric question', fenced({ question: 7, answer: 'A' }), 'missing_question'],
    ['an empty answer', fenced({ question: 'Q?', answer: ' ' }), 'missing_answer'],
    ['a list answer', fenced({ question: 'Q?', answer: ['A'] }), 'missing_answer'],
  ])('%s is a format error', (_name, text, reason) => {
    expect(parseQuestioner(text, 'general_qa', 40)).toEqual({ kind: 'bad_format', reason });
  });

  test('a general-QA answer over the token limit is discarded, not penalised', () => {
    const long = 'word '.repeat(40).trim(); // 199 characters ≈ 50 tokens
    expect(parseQuestioner(fenced({ question: 'Q?', answer: long }), 'general_qa', 40)).toEqual({
      kind: 'discarded',
      reason: 'answer_too_long',
    });
  });

  test.each([
    ['0', 'answer_zero'],
    ['0.00', 'answer_zero'],
    ['about nothing', 'answer_not_numeric'],
  ])('a financial answer %j is discarded (%s)', (answer, reason) => {
    expect(parseQuestioner(fenced({ question: 'How much?', answer }), 'financial_math', 40)).toEqual({
      kind: 'discarded',
      reason,
    });
  });

  test('a financial answer may be a JSON number', () => {
    expect(parseQuestioner(fenced({ question: 'How much?', answer: 12.5 }), 'financial_math', 40)).toEqual({
      kind: 'question',
      question: { task: 'financial_math', question: 'How much?', answer: '12.5' },
    });
  });

  const options = { A: '10', B: '20', C: '30', D: '40' };
  test('an MC question keeps its four options and the answer letter', () => {
    expect(
      parseQuestioner(fenced({ question: 'Which?', options, answer: '(c)' }), 'multiple_choice', 40),
    ).toEqual({
      kind: 'question',
      question: { task: 'multiple_choice', question: 'Which?', answer: 'C', options },
    });
  });

  test.each([
    [
      'three options',
      { question: 'Which?', options: { A: '1', B: '2', C: '3' }, answer: 'A' },
      'bad_options',
    ],
    ['an extra option', { question: 'Which?', options: { ...options, E: '50' }, answer: 'A' }, 'bad_options'],
    ['an empty option', { question: 'Which?', options: { ...options, B: '' }, answer: 'A' }, 'bad_options'],
    ['options as a list', { question: 'Which?', options: ['1', '2', '3', '4'], answer: 'A' }, 'bad_options'],
    ['letter E', { question: 'Which?', options, answer: 'E' }, 'bad_choice_letter'],
    ['the placeholder', { question: 'Which?', options, answer: '<correct_answer>' }, 'bad_choice_letter'],
  ])('an MC question with %s is a format error', (_name, value, reason) => {
    expect(parseQuestioner(fenced(value), 'multiple_choice', 40)).toEqual({ kind: 'bad_format', reason });
  });
});

describe('responder answers (§1.7)', () => {
  test.each([
    ['Some reasoning.\nThe correct answer is Velmont.', 'Velmont'],
    ['The correct answer is (the city of Velmont).', 'the city of Velmont'],
    ['The correct answer is (B).', '(B)'],
    ['Step 1 ...\nTherefore, the answer is 189.5.', '189.5'],
    ['the answer is 3, no wait. Therefore, the answer is **42**.', '42'],
    ['The correct answer is: "Paris"\nbecause ...', 'Paris'],
    ['<think>the answer is 1</think>The correct answer is 2.', '2'],
  ])('extracts from %j', (completion, answer) => {
    expect(extractAnswer(completion)).toBe(answer);
  });

  test.each([
    ['I believe it is Velmont.'],
    ['The correct answer is .'],
    ['<think>The answer is 5 but I keep thinking'],
    [`The answer is ${'x'.repeat(1001)}`],
  ])('no answer in %j', (completion) => {
    expect(extractAnswer(completion)).toBeNull();
  });
});

describe('verifier judgments (§1.8)', () => {
  test.each([
    ['Explanation: same city.\nDecision: [[YES]]', 1],
    ['Explanation: different.\nDecision: [[NO]]', 0],
    ['Explanation: the format says "[[YES]]" or "[[NO]]"; here they differ.\nDecision: [[NO]]', 0],
    ['Decision: "[[YES]]" or "[[NO]]"', -1],
    ['Explanation: hard to say.\nDecision: unclear', -1],
    ['[[YES]]', 1],
    ['<think>Decision: [[YES]]', -1],
    ['', -1],
  ])('%j → %i', (completion, vote) => {
    expect(parseVote(completion)).toBe(vote);
  });
});
