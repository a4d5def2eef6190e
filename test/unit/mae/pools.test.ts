import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { jsonlRecords } from '../../../activities/lib/input-records';
import {
  currentPools,
  excludedQuestionKeys,
  growPools,
  parseSeedQuestions,
} from '../../../activities/recipes/mae/pools';
import { ZERO_SETTING_SEEDS } from '../../../activities/recipes/mae/zero-seeds';
import type { MaeState } from '../../../activities/recipes/mae/records';
import { configFor } from '../../support/recipe-harness';

const params = (mae: Record<string, unknown> = {}) => configFor({ recipe: 'mae', mae }).mae;
const FIXTURE = path.resolve(__dirname, '../../fixtures/mae/seed-questions.jsonl');

describe('the pools at the start of an iteration', () => {
  test('zero setting: the 16 built-in questions and an empty P', async () => {
    const pools = await currentPools(params(), undefined);
    expect(ZERO_SETTING_SEEDS).toHaveLength(16);
    expect(pools).toEqual({ v: 1, seedCount: 16, questions: [...ZERO_SETTING_SEEDS], pairs: [] });
  });

  test('a seed file (the fixture): its questions, in order', async () => {
    const pools = await currentPools(params({ seedQuestions: FIXTURE }), undefined);
    expect(pools.seedCount).toBe(36);
    expect(pools.questions).toHaveLength(36);
    expect(pools.pairs).toEqual([]);
  });

  test('a committed state is taken as it is; another recipe’s state is refused', async () => {
    const state: MaeState = {
      v: 1,
      seedCount: 1,
      questions: ['q0', 'q1'],
      pairs: [{ question: 'q0', answer: 'a' }],
    };
    await expect(currentPools(params({ seedQuestions: '/nonexistent' }), state)).resolves.toEqual(state);
    await expect(currentPools(params(), { history: [] })).rejects.toMatchObject({
      type: 'InvalidInput',
      message: expect.stringContaining('not MAE') as unknown,
    });
  });

  test('bad seed files fail as config errors naming the line', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'mae-seeds-'));
    const write = (name: string, text: string) => {
      writeFileSync(path.join(dir, name), text);
      return path.join(dir, name);
    };
    await expect(
      currentPools(params({ seedQuestions: path.join(dir, 'missing.jsonl') }), undefined),
    ).rejects.toMatchObject({
      type: 'InvalidConfig',
      message: expect.stringContaining('does not exist') as unknown,
    });
    await expect(
      currentPools(params({ seedQuestions: write('empty.jsonl', '\n\n') }), undefined),
    ).rejects.toMatchObject({
      type: 'InvalidConfig',
      message: expect.stringContaining('no questions') as unknown,
    });
    const tooMany = write('many.jsonl', '{"question":"a"}\n{"question":"b"}\n{"question":"c"}\n');
    await expect(
      currentPools(params({ seedQuestions: tooMany, poolCap: 2 }), undefined),
    ).rejects.toMatchObject({
      type: 'InvalidConfig',
      message: expect.stringContaining('mae.poolCap') as unknown,
    });
  });

  test.each([
    ['not JSON', '{"question": "a"}\nnot json\n', /line 2: not JSON/],
    ['no question field', '{"text": "a"}\n', /line 1: expected/],
    ['an empty question', '{"question": "   "}\n', /line 1: expected/],
  ])('seed line %s', (_name, text, message) => {
    expect(() => parseSeedQuestions(jsonlRecords(text), 'seeds.jsonl')).toThrow(message);
  });

  test('seed lines may carry other fields; blank lines are skipped; duplicates are kept once', async () => {
    expect(
      parseSeedQuestions(jsonlRecords('{"question":" a ","domain":"x"}\n\n{"question":"b"}\n'), 's'),
    ).toEqual(['a', 'b']);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'mae-seeds-'));
    const file = path.join(dir, 'dup.jsonl');
    writeFileSync(file, '{"question":"What  is 2?"}\n{"question":"What is 2?"}\n{"question":"Why?"}\n');
    const pools = await currentPools(params({ seedQuestions: file }), undefined);
    expect(pools.questions).toEqual(['What  is 2?', 'Why?']);
    expect(pools.seedCount).toBe(2);
  });
});

describe('growing the pools', () => {
  const start: MaeState = {
    v: 1,
    seedCount: 2,
    questions: ['s1', 's2'],
    pairs: [{ question: 's1', answer: 'a0' }],
  };

  test('D gains accepted questions in order, once each (whitespace-insensitive), kept as written', () => {
    const g = growPools(start, ['new 1', 's1', 'new\n2', 'new  1', 'new 2'], [], {
      poolCap: 10,
      pairPoolCap: 10,
    });
    expect(g.state.questions).toEqual(['s1', 's2', 'new 1', 'new\n2']);
    expect(g).toMatchObject({ added: 2, duplicates: 3, overCap: 0, pairsDropped: 0 });
    expect(g.state.seedCount).toBe(2);
    expect(start.questions).toEqual(['s1', 's2']);
  });

  test('D never shrinks: at its cap new questions are turned away', () => {
    const g = growPools(start, ['a', 'b', 'c'], [], { poolCap: 3, pairPoolCap: 10 });
    expect(g.state.questions).toEqual(['s1', 's2', 'a']);
    expect(g).toMatchObject({ added: 1, overCap: 2 });
  });

  test('P appends every pair (duplicates too) and keeps the most recent ones', () => {
    const pairs = [
      { question: 'q1', answer: 'a1' },
      { question: 'q1', answer: 'a1' },
      { question: 'q2', answer: 'a2' },
    ];
    expect(growPools(start, [], pairs, { poolCap: 10, pairPoolCap: 10 }).state.pairs).toHaveLength(4);
    const capped = growPools(start, [], pairs, { poolCap: 10, pairPoolCap: 2 });
    expect(capped.state.pairs).toEqual(pairs.slice(1));
    expect(capped.pairsDropped).toBe(2);
  });
});

describe('the excluded questions (mae.excludeQuestions)', () => {
  test('none without the option; the file’s questions as D compares them; a bad line names the option', async () => {
    await expect(excludedQuestionKeys(params())).resolves.toEqual(new Set());
    const dir = mkdtempSync(path.join(os.tmpdir(), 'mae-exclude-'));
    const file = path.join(dir, 'heldout.jsonl');
    writeFileSync(
      file,
      '{"question": "What is  52 - 5?"}\n\n{"question": "What is 47 + 5?", "answer": 52}\n',
    );
    await expect(excludedQuestionKeys(params({ excludeQuestions: file }))).resolves.toEqual(
      new Set(['What is 52 - 5?', 'What is 47 + 5?']),
    );
    writeFileSync(file, '{"q": "x"}\n');
    await expect(excludedQuestionKeys(params({ excludeQuestions: file }))).rejects.toThrow(
      `mae.excludeQuestions ${file} line 1: expected {"question": "<non-empty text>"}`,
    );
    await expect(
      excludedQuestionKeys(params({ excludeQuestions: path.join(dir, 'missing.jsonl') })),
    ).rejects.toThrow(/mae\.excludeQuestions/);
  });
});
