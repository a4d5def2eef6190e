import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  checkEquivalence,
  isParsableMath,
  mathEquivalent,
  numericValue,
  numericallyEquivalent,
} from '../../../activities/scoring/math-equivalence';
import { answerIn } from '../../../cli/verify-answers';

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

  it('compares exact numbers exactly, however large (issue 11)', () => {
    expect(mathEquivalent('1000001', '1000000')).toBe(false);
    expect(mathEquivalent('2.000001', '2')).toBe(false);
    expect(mathEquivalent('1000000.5', '1000000')).toBe(false);
    expect(mathEquivalent('999!', '1000!')).toBe(false);
    expect(mathEquivalent('1000 \\cdot 999!', '1000!')).toBe(true);
    expect(mathEquivalent('2^{100}', '1267650600228229401496703205376')).toBe(true);
    expect(mathEquivalent('\\frac{10^{30}+1}{10^{30}}', '1')).toBe(false);
    expect(mathEquivalent('\\binom{10^{15}}{5\\cdot10^{14}}', '1')).toBe(false);
  });

  it('takes a rounded decimal for a value it cannot equal exactly, with enough digits', () => {
    expect(mathEquivalent('0.3333', '\\frac{1}{3}')).toBe(true);
    expect(mathEquivalent('0.333', '\\frac{1}{3}')).toBe(false);
    expect(mathEquivalent('0.3334', '\\frac{1}{3}')).toBe(false);
    expect(mathEquivalent('1.4142', '\\sqrt{2}')).toBe(true);
    expect(mathEquivalent('1.4143', '\\sqrt{2}')).toBe(false);
    expect(mathEquivalent('0.125', '\\frac{1}{8}')).toBe(true);
    expect(mathEquivalent('0.1250001', '\\frac{1}{8}')).toBe(false);
  });

  it('samples negative and non-integer points, so domains matter (issue 11)', () => {
    expect(mathEquivalent('|x|', 'x')).toBe(false);
    expect(mathEquivalent('\\sqrt{x^2}', 'x')).toBe(false);
    expect(mathEquivalent('\\sqrt{x^2}', '|x|')).toBe(true);
    expect(mathEquivalent('\\ln(x^2)', '2\\ln x')).toBe(false);
    expect(mathEquivalent('x^{2/3}', '\\sqrt[3]{x^2}')).toBe(true);
    expect(mathEquivalent('\\sqrt{x^2+2x+1}', 'x+1')).toBe(false);
    expect(mathEquivalent('\\sqrt{x^2+2x+1}', '|x+1|')).toBe(true);
  });

  it.each([
    ['(1, 2)', '(2, 1)', false],
    ['\\{1, 2\\}', '\\{2, 1\\}', true],
    ['1, 2', '2, 1', true],
    ['1, 2', '1, 2, 3', false],
    ['(1, 2)', '[1, 2]', false],
    ['[1, 2)', '[1, 2]', false],
    ['(-\\infty, 3]', 'x \\le 3', true],
    ['(-\\infty, 3)', 'x \\le 3', false],
    ['x \\ge 3', '3 \\le x', true],
    ['x > 3', 'x < 3', false],
    ['-1 < x \\le 2', '(-1, 2]', true],
    ['-1 < x \\le 2', '[-1, 2]', false],
    ['x = 1', 'x = -1', false],
    ['2x + 4y = 6', 'x + 2y = 3', true],
    ['2x + 4y = 6', 'x + 2y = 6', false],
    ['y = 2x + 1', '2x - y + 1 = 0', true],
    ['-x > -1', 'x < 1', true],
    ['-x > -1', 'x > 1', false],
    ['x \\ne 1', 'x \\neq 1', true],
    ['1 \\pm \\sqrt{2}', '1 + \\sqrt{2}, 1 - \\sqrt{2}', true],
    ['\\pm 2', '2', false],
    ['3:4', '6:8', true],
    ['3:4', '4:3', false],
    ['12:00', '1:00', false],
    [
      '\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}',
      '\\begin{bmatrix}1 & 2 \\\\ 3 & 4\\end{bmatrix}',
      true,
    ],
    [
      '\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}',
      '\\begin{pmatrix}1 & 3 \\\\ 2 & 4\\end{pmatrix}',
      false,
    ],
    ['12\\text{ cm}', '13\\text{ cm}', false],
    ['$125$ miles', '125', true],
    ['\\$10,\\!000', '10000', true],
    ['32, 349', '32349', false],
    ['28 percent', '28\\%', true],
    ['50\\%', '5', false],
    ['x \\approx 0.33', 'x = \\frac{1}{3}', false],
    ['\\frac{1}{3} \\approx 0.33', '\\frac{1}{3}', true],
    ['204_5', '54', true],
    ['204_5', '204_6', false],
    ['\\\\frac{1}{2}', '\\frac12', true],
    ['(x, y) = (1, 2)', '(1, 2)', true],
    ['a = 1, b = 2', 'b = 2, a = 1', true],
    ['a = 1, b = 2', 'a = 2, b = 1', false],
  ])('%s vs %s: %s', (predicted, gold, expected) => {
    expect(mathEquivalent(predicted, gold)).toBe(expected);
    expect(mathEquivalent(gold, predicted)).toBe(expected);
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
    ['\\begin{pmatrix}1 & 2\\end{pmatrix}', '(1, 2)'],
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
    const runs = Array.from({ length: 5 }, () => mathEquivalent('\\tan^2(y)+1', '\\sec^2(y)'));
    expect(runs).toEqual([true, true, true, true, true]);
  });

  it('says unparsable for an empty or overlong answer, or text where the gold is math', () => {
    expect(checkEquivalence('', '1')).toBe('unparsable');
    expect(checkEquivalence('1'.repeat(1001), '1')).toBe('unparsable');
    expect(checkEquivalence('\\text{none}', '1')).toBe('unparsable');
    expect(checkEquivalence('2', '1')).toBe('different');
  });
});

describe('the public answer-equivalence suites (test/fixtures/answer-equivalence)', () => {
  const dir = path.join(__dirname, '../../fixtures/answer-equivalence');
  const pairs = ['math-verify', 'nemo-skills', 'hendrycks-math', 'probes'].flatMap((suite) =>
    readFileSync(path.join(dir, `${suite}.jsonl`), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as { gold: string; pred: string; expected: string; source: string }),
  );

  it('agrees on at least 97% with no false positive', () => {
    const wrong = pairs.filter(({ gold, pred, expected }) => {
      const [g, p] = [answerIn(gold), answerIn(pred)];
      const said = g !== undefined && p !== undefined && mathEquivalent(p, g);
      return said !== (expected === 'equivalent');
    });
    expect(wrong.filter((w) => w.expected === 'different')).toEqual([]);
    expect(1 - wrong.length / pairs.length).toBeGreaterThanOrEqual(0.97);
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
    expect(isParsableMath('1, 2')).toBe(false);
  });
});
