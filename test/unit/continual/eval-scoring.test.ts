import {
  answerKindOf,
  judgeEvalAnswer,
  parseEvalSet,
  scoreOf,
  type EvalItem,
} from '../../../activities/continual/eval-scoring';
import { inlineAnswerChecker as check } from '../../support/answer-checker';

const item = (answer: string, kind = answerKindOf(answer)): EvalItem => ({
  id: 'q',
  question: 'Q?',
  answer,
  kind,
});

describe('held-out evaluation scoring', () => {
  test('the verifier follows the gold answer: choice letter, number, formula, string', () => {
    expect(answerKindOf('B')).toBe('mcq');
    expect(answerKindOf('(C)')).toBe('mcq');
    expect(answerKindOf('439')).toBe('integer');
    expect(answerKindOf('-2.5')).toBe('integer');
    expect(answerKindOf('\\frac{1}{2}')).toBe('integer');
    expect(answerKindOf('8x^2 + 10x - 3')).toBe('expression');
    expect(answerKindOf('\\sqrt{2}/2')).toBe('integer'); // a closed-form number compares by value
    expect(answerKindOf('\\sqrt{x}/2')).toBe('expression');
    expect(answerKindOf('nretnal')).toBe('string');
    expect(answerKindOf('New York')).toBe('string');
  });

  test('the last boxed answer is judged by math equivalence or normalised match; a missing box is wrong', async () => {
    expect(
      await judgeEvalAnswer(item('8x^2 + 10x - 3'), 'so \\boxed{2} no, \\boxed{10*x + 8*x^2 - 3}', check),
    ).toMatchObject({
      kind: 'expression',
      extracted: '10*x + 8*x^2 - 3',
      correct: true,
    });
    expect((await judgeEvalAnswer(item('8x^2 + 10x - 3'), '\\boxed{8x^2 + 11x - 3}', check)).correct).toBe(
      false,
    );
    expect((await judgeEvalAnswer(item('0.5'), 'the answer is \\boxed{\\frac{1}{2}}', check)).correct).toBe(
      true,
    );
    expect((await judgeEvalAnswer(item('B'), '\\boxed{(B)}', check)).correct).toBe(true);
    expect((await judgeEvalAnswer(item('The Nile'), '\\boxed{nile}', check)).correct).toBe(true);
    expect(await judgeEvalAnswer(item('439'), 'The final answer is 439.', check)).toMatchObject({
      extracted: null,
      correct: false,
    });
  });

  test('the score is the share of correct verdicts, and 0 for an empty set', () => {
    expect(scoreOf([{ correct: true }, { correct: false }, { correct: true }, { correct: true }])).toEqual({
      correct: 3,
      total: 4,
      score: 0.75,
    });
    expect(scoreOf([])).toEqual({ correct: 0, total: 0, score: 0 });
  });

  test('the JSONL set: ids default to line numbers, numbers are answers, a given kind wins', () => {
    const items = parseEvalSet(
      [
        '{"question":"2+2?","answer":4}',
        '',
        '{"id":"cap","question":"Capital of France?","answer":"Paris"}',
        '{"question":"Which?","answer":"12","kind":"string"}',
      ].join('\n'),
    );
    expect(items).toEqual([
      { id: '1', question: '2+2?', answer: '4', kind: 'integer' },
      { id: 'cap', question: 'Capital of France?', answer: 'Paris', kind: 'string' },
      { id: '4', question: 'Which?', answer: '12', kind: 'string' },
    ]);
  });

  test('every bad line is named; an empty set is an error', () => {
    expect(() =>
      parseEvalSet(
        '{"question":"ok","answer":"1"}\nnot json\n{"answer":"1"}\n{"question":"q","answer":"1","kind":"essay"}',
      ),
    ).toThrow(
      'line 2: not JSON; line 3: "question" must be a non-empty string; line 4: "kind" must be one of mcq, integer, expression, string',
    );
    expect(() => parseEvalSet('\n\n')).toThrow('no evaluation items');
  });
});
