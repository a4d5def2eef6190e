import { extractLastBoxed } from '../../../activities/scoring/boxed';

describe('extractLastBoxed', () => {
  it.each([
    ['The answer is \\boxed{42}.', '42'],
    ['\\boxed{\\frac{1}{\\sqrt{2}}}', '\\frac{1}{\\sqrt{2}}'],
    ['first \\boxed{1} then \\boxed{2}', '2'],
    ['spaced \\boxed {x^{2}+1}', 'x^{2}+1'],
    ['outer \\boxed{\\boxed{5} + 1} wins', '\\boxed{5} + 1'],
    ['a set \\boxed{\\{1, 2\\}}', '\\{1, 2\\}'],
    ['padded \\boxed{  B  }', 'B'],
    ['empty \\boxed{}', ''],
  ])('%j → %j', (text, expected) => {
    expect(extractLastBoxed(text)).toBe(expected);
  });

  it.each([
    ['no box here, the answer is 42'],
    ['truncated \\boxed{\\frac{1}{2'],
    ['earlier box \\boxed{1} but the last is cut \\boxed{2'],
    ['\\boxedx without braces'],
  ])('%j → undefined', (text) => {
    expect(extractLastBoxed(text)).toBeUndefined();
  });

  it('ignores stray closing braces after a complete box', () => {
    expect(extractLastBoxed('\\boxed{a}}} and more')).toBe('a');
  });
});
