import {
  checkAnswer,
  extractChoiceLetter,
  normalizeStringAnswer,
  type AnswerKind,
} from '../../../activities/scoring/verifiers';

const verifyAnswer = (kind: AnswerKind, predicted: string | undefined, gold: string): boolean =>
  checkAnswer(kind, predicted, gold) === 'equivalent';

describe('checkAnswer: mcq', () => {
  it.each(['B', 'b', '(B)', 'B)', 'B.', 'B:', 'B) 42 meters', '\\text{B}', '\\textbf{(B)}', '**B**', ' B '])(
    'accepts %j for gold B',
    (predicted) => {
      expect(verifyAnswer('mcq', predicted, 'B')).toBe(true);
    },
  );

  it.each(['A', 'C) 42 meters', 'Both', 'b cat', '42', '', 'BB'])('rejects %j for gold B', (predicted) => {
    expect(verifyAnswer('mcq', predicted, 'B')).toBe(false);
  });

  it('calls a missing answer or one without a letter unparsable, a wrong letter different', () => {
    expect(checkAnswer('mcq', undefined, 'B')).toBe('unparsable');
    expect(checkAnswer('mcq', 'Both', 'B')).toBe('unparsable');
    expect(checkAnswer('mcq', 'A', 'B')).toBe('different');
  });

  it('reads the letter of lettered forms', () => {
    expect(extractChoiceLetter('(d) the last one')).toBe('D');
    expect(extractChoiceLetter('Answer B')).toBeUndefined();
  });
});

describe('checkAnswer: integer', () => {
  it.each([
    ['1,000', '1000'],
    ['42.0', '42'],
    ['\\frac{84}{2}', '42'],
    ['1{,}000', '1000'],
  ])('%s = %s', (predicted, gold) => {
    expect(verifyAnswer('integer', predicted, gold)).toBe(true);
  });

  it.each([
    ['41', '42'],
    ['42x', '42'],
    ['forty-two', '42'],
  ])('%s ≠ %s', (predicted, gold) => {
    expect(verifyAnswer('integer', predicted, gold)).toBe(false);
  });
});

describe('checkAnswer: expression', () => {
  it('uses mathematical equivalence', () => {
    expect(verifyAnswer('expression', '(x-1)(x+1)', 'x^2 - 1')).toBe(true);
    expect(verifyAnswer('expression', '(x-1)^2', 'x^2 - 1')).toBe(false);
  });
});

describe('checkAnswer: string', () => {
  it.each([
    ['newton', 'Newton'],
    ['\\text{Paris}', 'Paris'],
    ['Newton’s third law', "Newton's Third Law"],
    ['  gradient   descent. ', 'gradient descent'],
    ['gradient-descent', 'gradient descent'],
    ['The Krebs cycle', 'Krebs cycle'],
    ['Schrödinger', 'Schrodinger'],
    ['TCP/IP', 'tcp ip'],
  ])('%j matches %j', (predicted, gold) => {
    expect(verifyAnswer('string', predicted, gold)).toBe(true);
  });

  it.each([
    ['C', 'C++'],
    ['Newton', 'Newtonian'],
    ['Vitamin', 'Vitamin A'],
    ['...', '!!!'],
  ])('%j does not match %j', (predicted, gold) => {
    expect(verifyAnswer('string', predicted, gold)).toBe(false);
  });

  it('normalises case, punctuation, wrappers and whitespace', () => {
    expect(normalizeStringAnswer('  \\textbf{The}  O(n log n)! ')).toBe('o n log n');
  });
});
