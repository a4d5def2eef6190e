import {
  isParsableMath,
  mathEquivalent,
  numericValue,
  numericallyEquivalent,
} from '../../../activities/scoring/math-equivalence';

describe('mathEquivalent', () => {
  it.each([
    ['\\frac{1}{2}', '0.5'],
    ['\\dfrac{2}{4}', '1/2'],
    ['2x+3x', '5x'],
    ['x^2-1', '(x-1)(x+1)'],
    ['\\sqrt{8}', '2\\sqrt{2}'],
    ['1{,}000', '1000'],
    ['1,000', '1000'],
    ['42.0', '42'],
    ['0.3333333', '\\frac{1}{3}'],
    ['x = 5', '5'],
    ['y = 2x + 1', '1 + 2x'],
    ['f(x) = x^2', 'x^2'],
    ['2x - y = 3', 'y - 2x = -3'],
    ['\\sin^2 x + \\cos^2 x', '1'],
    ['\\frac{1}{x}', 'x^{-1}'],
    ['2*x^2 + 3*x - 5', '(2x+5)(x-1)'],
    ['\\frac{\\sqrt{3}}{2}', '\\sin(\\pi/3)'],
    ['e^{i\\pi}', '-1'],
    ['\\infty', '\\infty'],
    ['log(8, 2)', '3'],
    ['5\\text{ cm}', '5'],
    ['\\left(\\frac{a}{b}\\right)^2', '\\frac{a^2}{b^2}'],
    ['x - x + 5', '5'],
  ])('%s ≡ %s', (predicted, gold) => {
    expect(mathEquivalent(predicted, gold)).toBe(true);
    expect(mathEquivalent(gold, predicted)).toBe(true);
  });

  it.each([
    ['\\frac{1}{2}', '0.51'],
    ['0.333', '\\frac{1}{3}'],
    ['x^2', 'x^3'],
    ['x^2-1', '(x-1)^2'],
    ['\\sqrt{8}', '3\\sqrt{2}'],
    ['2x', '2y'],
    ['x + y = 1', 'x^2 + y^2 = 1'],
    ['x = 5', 'x^2 = 5'],
    ['6.626 \\times 10^{-34}', '6.7 \\times 10^{-34}'],
    ['-\\infty', '\\infty'],
    ['1000', '100'],
  ])('%s ≢ %s', (predicted, gold) => {
    expect(mathEquivalent(predicted, gold)).toBe(false);
    expect(mathEquivalent(gold, predicted)).toBe(false);
  });

  it('relative tolerance is 1e-6', () => {
    expect(mathEquivalent('1000000.5', '1000000')).toBe(true);
    expect(mathEquivalent('1.00001', '1')).toBe(false);
  });

  describe('percentages (documented choice: with the sign on one side only, both readings count)', () => {
    it.each([
      ['50\\%', '0.5'],
      ['50\\%', '50'],
      ['12.5%', '0.125'],
      ['25', '25\\%'],
    ])('%s ≡ %s', (predicted, gold) => {
      expect(mathEquivalent(predicted, gold)).toBe(true);
    });

    it('does not equate different percentages', () => {
      expect(mathEquivalent('50\\%', '5\\%')).toBe(false);
      expect(mathEquivalent('0.5', '50')).toBe(false);
    });
  });

  it.each([
    ['', '1'],
    ['\\frac{1}{', '1/2'],
    ['ones(1000, 1000)', '1'],
    ['"a"', "'a'"],
    ['[1, 2]', '[1, 2.0]'],
    ['x = y = 1', '1'],
    ['1'.repeat(2000), '1'.repeat(2000)],
    ['x'.repeat(2000), 'x'.repeat(2000)],
    ['\\text{}', '0'],
  ])('never throws, and unparsable %j is not equivalent to %j', (predicted, gold) => {
    expect(() => mathEquivalent(predicted, gold)).not.toThrow();
    expect(mathEquivalent(predicted, gold)).toBe(false);
  });

  it('identical text is equivalent even when it is not math', () => {
    expect(mathEquivalent('Paris', 'Paris')).toBe(true);
    expect(mathEquivalent('Paris', 'Rome')).toBe(false);
  });

  it('is deterministic for expressions checked at random points', () => {
    const runs = Array.from({ length: 5 }, () => mathEquivalent('\\sqrt{x^2+2x+1}', 'x+1'));
    expect(runs).toEqual([true, true, true, true, true]);
  });
});

describe('numericallyEquivalent', () => {
  it('compares plain numbers only', () => {
    expect(numericallyEquivalent('1,000', '1000')).toBe(true);
    expect(numericallyEquivalent('42.0', '42')).toBe(true);
    expect(numericallyEquivalent('\\frac{84}{2}', '42')).toBe(true);
    expect(numericallyEquivalent('x = 42', '42')).toBe(true);
    expect(numericallyEquivalent('43', '42')).toBe(false);
    expect(numericallyEquivalent('x - x + 42', '42')).toBe(false);
  });
});

describe('numericValue and isParsableMath', () => {
  it('gives the value of plain numbers only', () => {
    expect(numericValue('1{,}000')).toBe(1000);
    expect(numericValue('2^{10}')).toBe(1024);
    expect(numericValue('2x')).toBeUndefined();
    expect(numericValue('forty-two')).toBeUndefined();
  });

  it('accepts values and equations, rejects the rest', () => {
    expect(isParsableMath('2*x^2 + 3*x - 5')).toBe(true);
    expect(isParsableMath('x^2 + y^2 = 1')).toBe(true);
    expect(isParsableMath('\\frac{1}{')).toBe(false);
    expect(isParsableMath('[1, 2]')).toBe(false);
  });
});
