import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseCommandLine } from '../../../cli/command-line';
import { COMMANDS } from '../../../cli/commands';
import { answerIn, parseAnswerPairs, verifyAnswersCommand } from '../../../cli/verify-answers';
import { selfplay } from '../../support/cli';

/** `selfplay verify-answers ARGV`, parsed by the CLI's command line. */
const run = async (...argv: string[]): Promise<void> => {
  const { args, flags } = parseCommandLine(COMMANDS, ['verify-answers', ...argv]);
  return verifyAnswersCommand(args[0] as string, flags);
};

const PAIRS = [
  { gold: '\\frac{1}{2}', pred: 'So the answer is $\\boxed{0.5}$.' },
  { gold: 'x', pred: '|x|' },
  { gold: 'The answer is \\boxed{(1, 2)}', pred: '\\boxed{(2, 1)} and then \\boxed{(1,2)}' },
  { gold: '42', pred: 'no answer \\boxed{4' },
  { gold: 12, pred: '12.0' },
];

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'verify-answers-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const write = async (lines: readonly unknown[]): Promise<string> => {
  const file = path.join(dir, 'pairs.jsonl');
  await writeFile(file, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n'));
  return file;
};

test('writes one verdict per line, in order, through the judge stage checker', async () => {
  const file = await write(PAIRS);
  const out = path.join(dir, 'verdicts.jsonl');
  const errors = jest.spyOn(console, 'error').mockImplementation(() => undefined);
  await run(file, '--out', out);
  const verdicts = (await readFile(out, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { line: number; verdict: string; ms: number });
  expect(verdicts.map((v) => [v.line, v.verdict])).toEqual([
    [1, 'equivalent'],
    [2, 'different'],
    [3, 'equivalent'],
    [4, 'unparsable'],
    [5, 'equivalent'],
  ]);
  for (const v of verdicts) expect(v.ms).toBeGreaterThanOrEqual(0);
  expect(errors).toHaveBeenCalledWith('5 pairs: 3 equivalent, 1 different, 1 unparsable, 0 timeout');
  errors.mockRestore();
});

test('the last \\boxed{} of a solution is the answer; text without one is the answer itself', () => {
  expect(answerIn('first \\boxed{1} then \\boxed{2}.')).toBe('2');
  expect(answerIn('x^2 + 1')).toBe('x^2 + 1');
  expect(answerIn('cut off \\boxed{3')).toBeUndefined();
});

test('names every bad line and refuses bad flags before checking anything', async () => {
  expect(() => parseAnswerPairs('{"gold":"1","pred":"1"}\nnot json\n{"gold":"1"}\n')).toThrow(
    'line 2: not JSON; line 3: expected {"gold": "...", "pred": "..."}',
  );
  expect(() => parseAnswerPairs('\n\n')).toThrow('no {"gold", "pred"} lines');
  const file = await write(PAIRS);
  await expect(run(file, '--kind', 'essay')).rejects.toThrow(
    '--kind: expected one of mcq, integer, expression, string, got essay',
  );
  await expect(run(file, '--timeout-ms', '0')).rejects.toThrow('--timeout-ms: expected a positive integer');
  await expect(run()).rejects.toThrow('verify-answers needs FILE');
  await expect(run(path.join(dir, 'missing.jsonl'))).rejects.toThrow('cannot read');
});

test('selfplay verify-answers runs as a command, its checker threads under tsx', async () => {
  const file = await write([
    { gold: 'B', pred: '\\boxed{(B)}' },
    { gold: 'C', pred: 'A' },
  ]);
  const result = await selfplay(['verify-answers', file, '--kind', 'mcq']);
  expect(result.code).toBe(0);
  expect(
    result.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { verdict: string }).verdict),
  ).toEqual(['equivalent', 'different']);
  expect(result.stderr).toContain('2 pairs: 1 equivalent, 1 different, 0 unparsable, 0 timeout');
});
