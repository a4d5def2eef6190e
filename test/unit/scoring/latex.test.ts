import { evaluate } from 'mathjs';
import { LatexParseError, latexToMathjs } from '../../../activities/scoring/latex';

const valueOf = (latex: string, scope: Record<string, number> = {}): number =>
  evaluate(latexToMathjs(latex), scope) as number;

describe('latexToMathjs', () => {
  it.each<[string, number]>([
    ['\\frac{1}{2}', 0.5],
    ['\\dfrac{3}{4}', 0.75],
    ['\\tfrac{1}{4}', 0.25],
    ['\\frac12', 0.5],
    ['\\sqrt{16}', 4],
    ['\\sqrt[3]{27}', 3],
    ['\\sqrt[3]{-8}', -2],
    ['2 \\cdot 3', 6],
    ['2 \\times 3', 6],
    ['6 \\div 4', 1.5],
    ['2^{10}', 1024],
    ['2^10', 1024],
    ['2^{-1}', 0.5],
    ['\\left( 1 + 2 \\right)^2', 9],
    ['2\\pi', 2 * Math.PI],
    ['3(1+1)', 6],
    ['50\\%', 0.5],
    ['12.5%', 0.125],
    ['1{,}000', 1000],
    ['1,000', 1000],
    ['1,234,567', 1234567],
    ['1\\,000', 1000],
    ['5\\text{ cm}', 5],
    ['9.8 \\, \\mathrm{m/s}^2', 9.8],
    ['3 \\times \\text{kg}', 3],
    ['30^\\circ', 30],
    ['3\\frac{1}{2}', 3.5],
    ['\\ln(e^2)', 2],
    ['\\log_2 8', 3],
    ['\\log_{10}(1000)', 3],
    ['\\exp(0)', 1],
    ['\\sin^{-1}(1)', Math.PI / 2],
    ['\\binom{5}{2}', 10],
    ['|{-3}|', 3],
    ['\\lfloor 3.7 \\rfloor', 3],
    ['4!', 24],
    ['6.02e23', 6.02e23],
    ['-2^2', -4],
    ['$\\frac{1}{2}$', 0.5],
    ['\\(7\\)', 7],
    ['7.', 7],
    ['\\$5', 5],
  ])('%s = %d', (latex, expected) => {
    expect(valueOf(latex)).toBeCloseTo(expected, 9);
  });

  it.each<[string, Record<string, number>, number]>([
    ['2x', { x: 3 }, 6],
    ['2x+3x', { x: 2 }, 10],
    ['xy', { x: 2, y: 5 }, 10],
    ['x(x+1)', { x: 3 }, 12],
    ['(x-1)(x+1)', { x: 3 }, 8],
    ['\\sin 2x', { x: 0.3 }, Math.sin(0.6)],
    ['\\sin^2 x + \\cos^2 x', { x: 0.7 }, 1],
    ['\\frac{a}{b}', { a: 1, b: 4 }, 0.25],
    ['x_1 + x_{2}', { x_1: 1, x_2: 2 }, 3],
    ['\\alpha^2', { alpha: 3 }, 9],
    ['e^{x}', { x: 1 }, Math.E],
    ['sqrt(x)', { x: 9 }, 3],
    ['\\mathbf{v} + 1', { v: 1 }, 2],
  ])('%s at %j = %d', (latex, scope, expected) => {
    expect(valueOf(latex, scope)).toBeCloseTo(expected, 9);
  });

  it('prints explicit structure', () => {
    expect(latexToMathjs('\\frac{1}{2}')).toBe('((1) / (2))');
    expect(latexToMathjs('2x')).toBe('(2 * x)');
    expect(latexToMathjs('x_{12}')).toBe('x_12');
  });

  it.each([
    [''],
    ['x = 5'],
    ['(1, 2)'],
    ['\\frac{1}{2'],
    ['1 \\pm 2'],
    ['\\{1, 2\\}'],
    ['2 3'],
    ['x^2^3'],
    ['\\unknowncommand{1}'],
    ['3 # 4'],
    ['('.repeat(500) + '1' + ')'.repeat(500)],
  ])('rejects %j with LatexParseError', (latex) => {
    expect(() => latexToMathjs(latex)).toThrow(LatexParseError);
  });
});
