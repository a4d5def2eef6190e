import { AnswerCheckerPool } from '../../../activities/scoring/answer-checker-pool';
import { metrics } from '../../../activities/lib/metrics';

const timeouts = (): number => {
  const line = metrics
    .expose()
    .split('\n')
    .find((l) => l.startsWith('selfplay_answer_checks_total{verdict="timeout"}'));
  return Number(line?.split(' ')[1] ?? 0);
};

/** 160 factorials near the exact limit (5000!) as a set, against itself reversed: seconds of BigInt work. */
const slow = (): { predicted: string; gold: string } => {
  const items = Array.from({ length: 160 }, (_, i) => `${4800 + i}!`);
  return { predicted: `\\{${items.join(',')}\\}`, gold: `\\{${items.reverse().join(',')}\\}` };
};

describe('AnswerCheckerPool', () => {
  let pool: AnswerCheckerPool;
  afterEach(() => pool.close());

  test('checks answers in worker threads with the judge stage checker', async () => {
    pool = new AnswerCheckerPool({ workers: 2 });
    const results = await Promise.all([
      pool.check({ kind: 'expression', predicted: '\\frac{1}{2}', gold: '0.5' }),
      pool.check({ kind: 'expression', predicted: '|x|', gold: 'x' }),
      pool.check({ kind: 'integer', predicted: 'x + 1', gold: '2' }),
      pool.check({ kind: 'mcq', predicted: '(B)', gold: 'B' }),
      // Issue 11's stalling output: thirty binomials, now a check of milliseconds.
      pool.check({
        kind: 'expression',
        predicted: `\\binom{x}{2}${'+\\binom{x}{3}'.repeat(30)}`,
        gold: '\\binom{x}{2}+30\\binom{x}{3}',
      }),
    ]);
    expect(results.map((r) => r.verdict)).toEqual([
      'equivalent',
      'different',
      'unparsable',
      'equivalent',
      'equivalent',
    ]);
    for (const r of results) expect(r.ms).toBeLessThan(pool.timeoutMs);
  });

  test('a check past the limit is a timeout, its thread is replaced and the next check is answered', async () => {
    pool = new AnswerCheckerPool({ workers: 1, timeoutMs: 500 });
    const before = timeouts();
    const [stalled, next] = await Promise.all([
      pool.check({ kind: 'expression', ...slow() }),
      pool.check({ kind: 'expression', predicted: '2x', gold: 'x+x' }),
    ]);
    expect(stalled).toEqual({ verdict: 'timeout', ms: 500 });
    expect(next.verdict).toBe('equivalent');
    expect(timeouts()).toBe(before + 1);
  });

  test('refuses an input over the size limit without checking it', async () => {
    pool = new AnswerCheckerPool({ workers: 1, maxInputChars: 100 });
    await expect(pool.check({ kind: 'expression', predicted: '1'.repeat(101), gold: '1' })).resolves.toEqual({
      verdict: 'unparsable',
      ms: 0,
    });
  });

  test('rejects bad options and checks after close', async () => {
    expect(() => new AnswerCheckerPool({ timeoutMs: 0 })).toThrow(
      'timeoutMs must be a positive integer, got 0',
    );
    pool = new AnswerCheckerPool({ workers: 1 });
    await pool.close();
    await expect(pool.check({ kind: 'expression', predicted: '1', gold: '1' })).rejects.toThrow('closed');
  });
});
