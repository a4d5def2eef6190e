import {
  answerKindOf,
  benchmarkScore,
  judgeSample,
  majorityCorrect,
  passAtK,
  reportedKs,
  type GoldAnswer,
  type SampleVerdict,
} from '../../../activities/evaluation/scoring';
import { AnswerCheckerPool } from '../../../activities/scoring/answer-checker-pool';

const binomial = (n: bigint, k: bigint): bigint => {
  let out = 1n;
  for (let i = 1n; i <= k; i++) out = (out * (n - k + i)) / i;
  return out;
};

const gold = (answer: string, kind = answerKindOf(answer)): GoldAnswer => ({ answer, kind });

describe('held-out evaluation scoring', () => {
  test('the verifier follows the gold answer: choice letter, number, formula, string', () => {
    expect(answerKindOf('B')).toBe('mcq');
    expect(answerKindOf('(C)')).toBe('mcq');
    expect(answerKindOf('439')).toBe('integer');
    expect(answerKindOf('-2.5')).toBe('integer');
    expect(answerKindOf('\\frac{1}{2}')).toBe('integer');
    expect(answerKindOf('8x^2 + 10x - 3')).toBe('expression');
    expect(answerKindOf('\\sqrt{2}/2')).toBe('integer'); // a closed-form number compares by value
    expect(answerKindOf('\\sqrt{x}/2')).toBe('expression');
    expect(answerKindOf('nretnal')).toBe('string');
    expect(answerKindOf('New York')).toBe('string');
  });

  test('the last boxed answer is judged by the answer checker; a missing box is wrong', async () => {
    const pool = new AnswerCheckerPool({ workers: 1 });
    const check = (request: Parameters<typeof pool.check>[0]) => pool.check(request);
    try {
      await expect(
        judgeSample(gold('8x^2 + 10x - 3'), 'so \\boxed{2} no, \\boxed{10*x + 8*x^2 - 3}', check),
      ).resolves.toEqual({ extracted: '10*x + 8*x^2 - 3', correct: true });
      expect((await judgeSample(gold('8x^2 + 10x - 3'), '\\boxed{8x^2 + 11x - 3}', check)).correct).toBe(
        false,
      );
      expect((await judgeSample(gold('0.5'), 'the answer is \\boxed{\\frac{1}{2}}', check)).correct).toBe(
        true,
      );
      expect((await judgeSample(gold('B'), '\\boxed{(B)}', check)).correct).toBe(true);
      expect((await judgeSample(gold('The Nile'), '\\boxed{nile}', check)).correct).toBe(true);
      await expect(judgeSample(gold('439'), 'The final answer is 439.', check)).resolves.toEqual({
        extracted: null,
        correct: false,
      });
      // SPELL's responders close with "the answer is": read there when the evaluation says so.
      await expect(
        judgeSample(gold('439'), '400 + 39 = 439. Therefore, the answer is 439.', check, 'answer_is'),
      ).resolves.toEqual({ extracted: '439', correct: true });
      expect(
        (await judgeSample(gold('439'), 'Therefore, the answer is 438.', check, 'answer_is')).correct,
      ).toBe(false);
      await expect(judgeSample(gold('439'), '\\boxed{439}', check, 'answer_is')).resolves.toEqual({
        extracted: null,
        correct: false,
      });
      // A truncated completion whose last box never closes has no answer.
      await expect(judgeSample(gold('439'), '\\boxed{439} then \\boxed{43', check)).resolves.toEqual({
        extracted: null,
        correct: false,
      });
    } finally {
      await pool.close();
    }
  });
});

describe('pass@k (the unbiased estimator of Chen et al. 2021)', () => {
  test('matches 1 - C(n-c,k)/C(n,k) computed by hand', () => {
    expect(passAtK(4, 1, 1)).toBeCloseTo(1 - 3 / 4, 12);
    expect(passAtK(4, 1, 2)).toBeCloseTo(1 - 3 / 6, 12); // C(3,2)=3, C(4,2)=6
    expect(passAtK(4, 2, 2)).toBeCloseTo(1 - 1 / 6, 12); // C(2,2)=1
    expect(passAtK(5, 2, 3)).toBeCloseTo(1 - 1 / 10, 12); // C(3,3)=1, C(5,3)=10
    expect(passAtK(10, 3, 5)).toBeCloseTo(1 - 21 / 252, 12); // C(7,5)=21, C(10,5)=252
    expect(passAtK(1, 1, 1)).toBe(1);
    expect(passAtK(1, 0, 1)).toBe(0);
  });

  test('is 0 with no correct sample, 1 when every k-subset holds one, and k=1 is the share correct', () => {
    expect(passAtK(8, 0, 8)).toBe(0);
    expect(passAtK(4, 1, 4)).toBe(1);
    expect(passAtK(8, 5, 4)).toBe(1); // only 3 wrong samples: every 4 of them include a right one
    expect(passAtK(64, 17, 1)).toBeCloseTo(17 / 64, 12);
    // Large n neither overflows nor loses the value: checked against exact binomials.
    const exact = Number((binomial(990n, 500n) * 10n ** 18n) / binomial(1000n, 500n)) / 1e18;
    expect(passAtK(1000, 10, 500)).toBeCloseTo(1 - exact, 12);
  });

  test('refuses impossible counts', () => {
    expect(() => passAtK(4, 5, 1)).toThrow('0 ≤ c ≤ n and 1 ≤ k ≤ n, got n=4, c=5, k=1');
    expect(() => passAtK(4, 1, 5)).toThrow(RangeError);
    expect(() => passAtK(4, 1, 0)).toThrow(RangeError);
    expect(() => passAtK(4, 1.5, 1)).toThrow(RangeError);
  });
});

describe('majority vote', () => {
  const v = (extracted: string | null, correct: boolean): SampleVerdict => ({ extracted, correct });

  test('the correct samples vote together, wrong ones by their text, unanswered samples do not vote', () => {
    expect(majorityCorrect([v('\\frac{1}{2}', true), v('3', false), v('0.5', true), v(null, false)])).toBe(
      true,
    );
    expect(majorityCorrect([v('4', false), v('4', false), v('5', true), v(null, false)])).toBe(false);
    expect(
      majorityCorrect([v(' 4', false), v('4 ', false), v('5', true), v('5.0', true), v('6', false)]),
    ).toBe(false);
    expect(majorityCorrect([v(null, false), v(null, false)])).toBe(false);
    expect(majorityCorrect([])).toBe(false);
  });

  test('a tie goes to the group that appeared first', () => {
    expect(majorityCorrect([v('7', true), v('5', false), v('5', false), v('7', true)])).toBe(true);
    expect(majorityCorrect([v('5', false), v('7', true), v('7', true), v('5', false)])).toBe(false);
    expect(majorityCorrect([v(null, false), v('9', true), v('8', false)])).toBe(true);
  });
});

describe('benchmark scores', () => {
  const v = (extracted: string | null, correct: boolean): SampleVerdict => ({ extracted, correct });

  test('reported k: powers of two below n, then n; none for one sample', () => {
    expect(reportedKs(1)).toEqual([]);
    expect(reportedKs(2)).toEqual([1, 2]);
    expect(reportedKs(4)).toEqual([1, 2, 4]);
    expect(reportedKs(6)).toEqual([1, 2, 4, 6]);
    expect(reportedKs(8)).toEqual([1, 2, 4, 8]);
  });

  test('accuracy, pass@k and maj@k of three items with four samples, computed by hand', () => {
    const score = benchmarkScore([
      // 1 of 4 right; the wrong answer 3 wins the full vote, but the first sample (and the 1-1 tie of the first two) is 5.
      { ...gold('5'), samples: [v('5', true), v('3', false), v('3', false), v(null, false)] },
      // 3 of 4 right, written three ways.
      {
        ...gold('0.5'),
        samples: [v('\\frac{1}{2}', true), v('0.5', true), v('2', false), v('1/2', true)],
      },
      // no answer at all.
      { ...gold('12'), samples: [v(null, false), v(null, false), v(null, false), v(null, false)] },
    ]);
    expect(score.items).toBe(3);
    expect(score.n).toBe(4);
    expect(score.accuracy).toBeCloseTo((1 / 4 + 3 / 4 + 0) / 3, 12);
    expect(Object.keys(score.passAtK)).toEqual(['1', '2', '4']);
    expect(score.passAtK['1']).toBeCloseTo(1 / 3, 12);
    expect(score.passAtK['2']).toBeCloseTo((1 / 2 + 1 + 0) / 3, 12);
    expect(score.passAtK['4']).toBeCloseTo(2 / 3, 12);
    expect(score.majAtK).toEqual({ '1': 2 / 3, '2': 2 / 3, '4': 1 / 3 });
    expect(score.noAnswer).toBeCloseTo(5 / 12, 12);
    // Unbiased per-item variances 1/4, 1/4 and 0 (p(1-p) of 1/4 and 3/4, times 4/3), over n = 4 and N = 3.
    expect(score.standardError).toBeCloseTo(Math.sqrt((1 / 4 + 1 / 4 + 0) / 4) / 3, 12);
  });

  test('the standard error falls with more samples per item, and is 0 when every item is settled', () => {
    const items = (n: number, right: number) =>
      Array.from({ length: 10 }, () => ({
        ...gold('1'),
        samples: Array.from({ length: n }, (_, k) => v(k < right ? '1' : '2', k < right)),
      }));
    const twoSamples = benchmarkScore(items(2, 1)).standardError ?? NaN;
    const eightSamples = benchmarkScore(items(8, 4)).standardError ?? NaN;
    expect(eightSamples).toBeLessThan(twoSamples);
    expect(benchmarkScore(items(4, 4)).standardError).toBe(0);
  });

  test('one sample per item: accuracy is the share correct, no pass@k or maj@k', () => {
    const score = benchmarkScore([
      { ...gold('1'), samples: [v('1', true)] },
      { ...gold('2'), samples: [v('3', false)] },
      { ...gold('3'), samples: [v('3', true)] },
      { ...gold('4'), samples: [v('4', true)] },
    ]);
    const standardError = Math.sqrt((0.75 * 0.25) / 4); // the binomial error: no spread within an item to use
    expect(score).toEqual({
      items: 4,
      n: 1,
      accuracy: 0.75,
      standardError,
      passAtK: {},
      majAtK: {},
      noAnswer: 0,
    });
    expect(benchmarkScore([])).toEqual({
      items: 0,
      n: 0,
      accuracy: 0,
      standardError: 0,
      passAtK: {},
      majAtK: {},
      noAnswer: 0,
    });
  });

  test('items with different sample counts are refused', () => {
    expect(() =>
      benchmarkScore([
        { ...gold('1'), samples: [v('1', true), v('1', true)] },
        { ...gold('2'), samples: [v('2', true)] },
      ]),
    ).toThrow('item 1 has 1 samples, the first has 2');
  });
});
