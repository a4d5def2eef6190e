import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import {
  detectFormat,
  loadBenchmark,
  parseBenchmark,
  selectItems,
  type BenchmarkItem,
} from '../../../activities/evaluation/benchmarks';

const FIXTURES = 'test/fixtures/benchmarks';
const sample = (file: string): string => readFileSync(path.join(FIXTURES, file), 'utf8');
const golds = (items: BenchmarkItem[]): Array<[string, string]> => items.map((i) => [i.id, i.answer]);

describe('benchmark formats', () => {
  test('GSM8K: the gold after "#### ", thousands separators dropped, ids are line numbers', () => {
    const { format, items } = parseBenchmark(sample('gsm8k-sample.jsonl'));
    expect(format).toBe('gsm8k');
    expect(golds(items)).toEqual([
      ['1', '18'],
      ['2', '3'],
      ['3', '70000'],
      ['4', '540'],
      ['5', '20'],
      ['6', '64'],
      ['7', '260'],
      ['8', '2125'], // "#### 2,125"
    ]);
    expect(items[0]?.question).toMatch(/^Janet’s ducks lay 16 eggs per day\./);
    expect(items.map((i) => i.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(items.every((i) => i.kind === 'integer')).toBe(true);
  });

  test('MATH-500: the last \\boxed{} of the answer (nested braces kept)', () => {
    const { format, items } = parseBenchmark(sample('math500-sample.jsonl'));
    expect(format).toBe('math500');
    expect(items.map((i) => i.answer)).toEqual([
      '\\left( 3, \\frac{\\pi}{2} \\right)',
      'p - q',
      '\\frac{14}{3}',
      '9',
      '\\text{Evelyn}',
      '42',
      '27',
      '90^\\circ',
    ]);
    // Without a box, the text after "The answer is: ".
    const unboxed = parseBenchmark('{"question":"Q?","answer":"So it is 7.The answer is: 7"}\n');
    expect(unboxed).toEqual({
      format: 'math500',
      items: [{ index: 0, id: '1', question: 'Q?', answer: '7', kind: 'integer' }],
    });
  });

  test('AIME and AMC: the problem and the answer field (AMC answers are numbers), ids from the file', () => {
    const aime = parseBenchmark(sample('aime24-sample.jsonl'));
    expect(aime.format).toBe('aime');
    expect(golds(aime.items)).toEqual([
      ['60', '204'],
      ['61', '113'],
      ['62', '371'],
      ['63', '385'],
      ['64', '110'],
    ]);
    expect(aime.items[0]?.question).toMatch(/^Every morning Aya goes for a \$9\$-kilometer-long walk/);
    const amc = parseBenchmark(sample('amc23-sample.jsonl'));
    expect(amc.format).toBe('amc');
    expect(amc.items.map((i) => i.answer)).toEqual(['27', '36', '45', '3159', '36', '7', '21', '3']);
    expect(amc.items[0]?.question).toMatch(/^Cities \$A\$ and \$B\$ are \$45\$ miles apart\./);
  });

  test('Minerva: the last \\boxed{} of the solution, ids from idx', () => {
    const { format, items } = parseBenchmark(sample('minerva_math-sample.jsonl'));
    expect(format).toBe('minerva');
    expect(golds(items)).toEqual([
      ['0', '1.6'],
      ['1', '4.5e33'],
      ['2', '41.8'],
      ['3', '20.39'],
      ['4', '0.006'],
      ['5', 'np.arcsin(10/13)'],
    ]);
  });

  test('the simple format: ids default to line numbers, numbers are answers, a given kind wins', () => {
    const { format, items } = parseBenchmark(
      [
        '{"question":"2+2?","answer":4}',
        '',
        '{"id":"cap","question":"Capital of France?","answer":"Paris"}',
        '{"question":"Which?","answer":"12","kind":"string"}',
      ].join('\n'),
    );
    expect(format).toBe('simple');
    expect(items).toEqual([
      { index: 0, id: '1', question: '2+2?', answer: '4', kind: 'integer' },
      { index: 1, id: 'cap', question: 'Capital of France?', answer: 'Paris', kind: 'string' },
      { index: 2, id: '4', question: 'Which?', answer: '12', kind: 'string' },
    ]);
    expect(parseBenchmark(readFileSync('test/fixtures/eval/heldout.jsonl', 'utf8')).items).toHaveLength(6);
  });

  test('detection goes by the fields; a named format overrides it', () => {
    expect(detectFormat({ question: 'q', answer: 'work\n#### 5' })).toBe('gsm8k');
    expect(detectFormat({ question: 'q', answer: 'so \\boxed{5}' })).toBe('math500');
    expect(detectFormat({ question: 'q', answer: '5' })).toBe('simple');
    expect(detectFormat({ id: 1, problem: 'p', solution: 's', answer: '5', url: 'u' })).toBe('aime');
    expect(detectFormat({ id: 1, problem: 'p', answer: 5, url: 'u' })).toBe('amc');
    expect(detectFormat({ problem: 'p', solution: '\\boxed{5}', idx: 0, type: 't' })).toBe('minerva');
    expect(detectFormat({ prompt: 'p', completion: 'c' })).toBeUndefined();
    // A MATH-style line read as the simple format keeps its whole answer as the gold.
    expect(parseBenchmark('{"question":"q","answer":"so \\\\boxed{5}"}', 'simple').items[0]?.answer).toBe(
      'so \\boxed{5}',
    );
  });

  test('every bad line is named, with the format it was read as; an empty file is an error', () => {
    expect(() =>
      parseBenchmark(
        '{"question":"ok","answer":"1"}\nnot json\n{"answer":"1"}\n{"question":"q","answer":"1","kind":"essay"}\n[1]',
      ),
    ).toThrow(
      'line 2: not JSON; line 3: "question" must be a non-empty string (format simple); ' +
        'line 4: "kind" must be one of mcq, integer, expression, string (format simple); line 5: not a JSON object',
    );
    expect(() =>
      parseBenchmark('{"question":"q","answer":"a\\n#### 1"}\n{"question":"q","answer":"no marker"}'),
    ).toThrow('line 2: "answer" has no "#### " final answer (format gsm8k)');
    expect(() => parseBenchmark('{"problem":"p","solution":"no box","idx":0}', 'minerva')).toThrow(
      'line 1: "solution" has no \\boxed{} answer (format minerva)',
    );
    expect(() => parseBenchmark('{"question":"q","answer":"none"}', 'math500')).toThrow(
      'line 1: "answer" has neither a \\boxed{} answer nor "The answer is: " (format math500)',
    );
    expect(() => parseBenchmark('{"prompt":"p","completion":"c"}')).toThrow(
      'line 1: the fields prompt, completion fit no benchmark format; name the format',
    );
    expect(() => parseBenchmark('\n\n')).toThrow('no evaluation items');
    const many = Array.from({ length: 25 }, () => 'x').join('\n');
    expect(() => parseBenchmark(many)).toThrow(/line 10: not JSON; and 15 more$/);
  });
});

describe('item selection', () => {
  const items = parseBenchmark(sample('gsm8k-sample.jsonl')).items;

  test('all, the first limit, or a seeded subset in file order', () => {
    expect(selectItems(items, {})).toHaveLength(8);
    expect(selectItems(items, { limit: 3 }).map((i) => i.index)).toEqual([0, 1, 2]);
    expect(selectItems(items, { limit: 50 })).toHaveLength(8);
    const subset = selectItems(items, { limit: 4, subsetSeed: 7 }).map((i) => i.index);
    expect(subset).toHaveLength(4);
    expect([...subset].sort((a, b) => a - b)).toEqual(subset);
    expect(new Set(subset).size).toBe(4);
    expect(selectItems(items, { limit: 4, subsetSeed: 7 }).map((i) => i.index)).toEqual(subset);
    const others = [1, 2, 3, 4, 5].map((seed) =>
      selectItems(items, { limit: 4, subsetSeed: seed })
        .map((i) => i.index)
        .join(),
    );
    expect(new Set([...others, subset.join()]).size).toBeGreaterThan(1);
  });
});

describe('loading', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-'));

  test('from a path, a file:// URI and a gzipped file', async () => {
    const plain = path.join(dir, 'amc.jsonl');
    writeFileSync(plain, sample('amc23-sample.jsonl'));
    const gz = path.join(dir, 'amc.jsonl.gz');
    writeFileSync(gz, gzipSync(sample('amc23-sample.jsonl')));
    for (const uri of [plain, pathToFileURL(plain).href, gz]) {
      const b = await loadBenchmark(uri, undefined, 'amc');
      expect(b.format).toBe('amc');
      expect(b.items).toHaveLength(8);
    }
  });

  test('a missing file and a bad line fail non-retryably, naming the benchmark', async () => {
    const missing = path.join(dir, 'nope.jsonl');
    await expect(loadBenchmark(missing, undefined, 'benchmark "x" (nope)')).rejects.toMatchObject({
      nonRetryable: true,
      type: 'InvalidInput',
      message: expect.stringContaining(`benchmark "x" (nope): no object at ${missing}`) as unknown,
    });
    const bad = path.join(dir, 'bad.jsonl');
    writeFileSync(bad, '{"question":"q","answer":"1"}\n{"question":""}\n');
    await expect(loadBenchmark(bad, undefined, 'benchmark "bad"')).rejects.toMatchObject({
      nonRetryable: true,
      message: 'benchmark "bad": line 2: "question" must be a non-empty string (format simple)',
    });
    await expect(loadBenchmark('http://example.com/x.jsonl', undefined, 'web')).rejects.toMatchObject({
      nonRetryable: true,
      message: expect.stringContaining('web: unsupported storage URI') as unknown,
    });
  });
});
