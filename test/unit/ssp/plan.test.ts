import { jsonlRecords } from '../../../activities/lib/input-records';
import { parseAnswers } from '../../../activities/recipes/ssp/answers';
import { answerWalk, planSsp } from '../../../activities/recipes/ssp/plan';
import type { SspAnswer } from '../../../activities/recipes/ssp/records';
import { configFor } from '../../support/recipe-harness';

const D: SspAnswer[] = Array.from({ length: 10 }, (_, i) => ({
  answer: `a${i}`,
  searchTurns: 2,
  examples: [],
}));

describe('SSP answers and plan (ssp.md §1.1)', () => {
  test('records: answer or ground_truth, search_turns, examples or sys_question_example; defaults', () => {
    const body = [
      JSON.stringify({ answer: 'Velmora', search_turns: 3, examples: ['q1', ' ', 'q2'] }),
      '',
      JSON.stringify({ ground_truth: 1621, sys_question_example: 'one example', extra: true }),
      JSON.stringify({ answer: ' Ostrel ' }),
    ].join('\n');
    expect(parseAnswers(jsonlRecords(body), 'mem', 2)).toEqual([
      { answer: 'Velmora', searchTurns: 3, examples: ['q1', 'q2'] },
      { answer: '1621', searchTurns: 2, examples: ['one example'] },
      { answer: 'Ostrel', searchTurns: 2, examples: [] },
    ]);
  });

  test.each([
    ['not json', /line 1: not JSON/],
    ['{"question":"no answer"}', /line 1: expected \{"answer"/],
    ['{"answer":"  "}', /line 1: expected \{"answer"/],
    ['{"answer":"x","search_turns":0}', /line 1:/],
  ])('a bad line (%s) is a config error naming the line', (line, message) => {
    expect(() => parseAnswers(jsonlRecords(line), 'mem', 2)).toThrow(message);
  });

  test('one epoch is a permutation of D: no repeats until every answer was planned', () => {
    const epoch = [1, 2, 3, 4, 5].flatMap((k) => answerWalk(D, 7, k, 2)).map((a) => a.answer);
    expect(new Set(epoch).size).toBe(10);
    const next = [6, 7, 8, 9, 10].flatMap((k) => answerWalk(D, 7, k, 2)).map((a) => a.answer);
    expect(new Set(next).size).toBe(10);
    expect(next).not.toEqual(epoch); // a new permutation per epoch
  });

  test('deterministic in (seed, iteration); a batch larger than D spans epochs', () => {
    expect(answerWalk(D, 7, 3, 4)).toEqual(answerWalk(D, 7, 3, 4));
    expect(answerWalk(D, 8, 1, 10)).not.toEqual(answerWalk(D, 7, 1, 10));
    const big = answerWalk(D, 7, 1, 25).map((a) => a.answer);
    expect(new Set(big.slice(0, 10)).size).toBe(10);
    expect(new Set(big.slice(10, 20)).size).toBe(10);
  });

  test('planSsp reads the configured file and plans B answers', async () => {
    const config = configFor({ recipe: 'ssp', batchSize: 6, retrieval: { index: '/nowhere' } });
    const units = await planSsp({
      config,
      runId: 'unit',
      iteration: 1,
      corpus: () => Promise.reject(new Error('SSP needs no corpus')),
      segments: () => Promise.reject(new Error('SSP needs no corpus')),
      state: undefined,
    });
    expect(units).toHaveLength(6);
    for (const u of units) {
      expect(u.answer).toMatch(/^[A-Z][a-z]+$/);
      expect([2, 3]).toContain(u.searchTurns);
      expect(u.examples).toHaveLength(3);
    }
  });

  test('planSsp refuses another estimator and a missing file, naming the field', async () => {
    const ctx = (over: Record<string, unknown>) => ({
      config: configFor({ recipe: 'ssp', retrieval: { index: '/nowhere' }, ...over }),
      runId: 'unit',
      iteration: 1,
      corpus: () => Promise.reject(new Error('unused')),
      segments: () => Promise.reject(new Error('unused')),
      state: undefined,
    });
    await expect(planSsp(ctx({ training: { estimator: 'dr_grpo' } }))).rejects.toThrow(/training\.estimator/);
    await expect(planSsp({ ...ctx({}), config: configFor({ recipe: 'ssp' }) })).rejects.toThrow(
      /retrieval\.index/,
    );
    await expect(planSsp(ctx({ ssp: { answers: 'test/fixtures/ssp/missing.jsonl' } }))).rejects.toThrow(
      /ssp\.answers test\/fixtures\/ssp\/missing\.jsonl/,
    );
  });
});
