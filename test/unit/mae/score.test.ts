import {
  askScoreJudge,
  judgeScore,
  mapScore,
  NEUTRAL_SCORE,
  parseScore,
} from '../../../activities/judges/score';
import { scriptedCaller } from '../../support/recipe-harness';

describe('score parsing: first parsable <score>, fraction then decimal then integer', () => {
  test.each([
    ['an integer', '<think>ok</think><score>8</score>', { ok: true, x: 8 }],
    ['padding and words', '<score> Score: 7 </score>', { ok: true, x: 7 }],
    ['a decimal', '<score>7.5</score>', { ok: true, x: 7.5 }],
    ['a fraction of 10', '<score>8/10</score>', { ok: true, x: 8 }],
    ['a fraction of 5 (rescaled to 10 points)', '<score>4 / 5</score>', { ok: true, x: 8 }],
    ['a fraction before a decimal', '<score>7.5 or 3/4</score>', { ok: true, x: 7.5 }],
    ['the first of several tags', '<score>3</score> <score>9</score>', { ok: true, x: 3 }],
    [
      'an echo of the rubric, then the score',
      'between <score> and </score>: <score>6</score>',
      { ok: true, x: 6 },
    ],
    ['a sign is kept', '<score>-3</score>', { ok: true, x: -3 }],
    ['out of range is parsed (and clipped by the mapping)', '<score>15</score>', { ok: true, x: 15 }],
    ['a zero denominator is no number', '<score>5/0</score>', { ok: false, reason: 'unparsable_score' }],
    ['words only', '<score>excellent</score>', { ok: false, reason: 'unparsable_score' }],
    ['an empty tag', '<score></score>', { ok: false, reason: 'unparsable_score' }],
    ['no tag', 'I would give it an 8.', { ok: false, reason: 'no_score_tag' }],
    ['an unclosed tag', '<score>8', { ok: false, reason: 'no_score_tag' }],
    ['an empty output', '', { ok: false, reason: 'no_score_tag' }],
  ])('%s', (_name, text, expected) => {
    expect(parseScore(text)).toEqual(expected);
  });
});

describe('score mapping onto [0, 1]', () => {
  test.each([
    [1, 0, 0.1],
    [5, 4 / 9, 0.5],
    [7, 6 / 9, 0.7],
    [8, 7 / 9, 0.8],
    [10, 1, 1],
    [0, 0, 0],
    [-3, 0, 0],
    [15, 1, 1],
  ])('X = %d: (X−1)/9 gives %d, X/10 gives %d', (x, shifted, tenths) => {
    expect(mapScore(x, '(x-1)/9')).toBeCloseTo(shifted, 12);
    expect(mapScore(x, 'x/10')).toBeCloseTo(tenths, 12);
  });

  test('the 0.7 gate is X ≥ 8 under (X−1)/9 and X ≥ 7 under X/10', () => {
    const passes = (mapping: '(x-1)/9' | 'x/10') =>
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].filter((x) => mapScore(x, mapping) >= 0.7);
    expect(passes('(x-1)/9')).toEqual([8, 9, 10]);
    expect(passes('x/10')).toEqual([7, 8, 9, 10]);
  });
});

describe('judge scores with the neutral fallback', () => {
  test('a parsed score carries X and its value; a failure is 0.5 with the reason', () => {
    expect(judgeScore('<score>10</score>', '(x-1)/9')).toEqual({
      completion: '<score>10</score>',
      value: 1,
      x: 10,
    });
    expect(judgeScore('no score here', '(x-1)/9')).toEqual({
      completion: 'no score here',
      value: NEUTRAL_SCORE,
      fallback: 'no_score_tag',
    });
    expect(judgeScore('<score>great</score>', 'x/10')).toMatchObject({
      value: 0.5,
      fallback: 'unparsable_score',
    });
    expect(NEUTRAL_SCORE).toBe(0.5);
  });

  test('askScoreJudge asks the given endpoint for one judgement', async () => {
    const { llm, calls } = scriptedCaller(() => '<think>fine</think><score>4/5</score>');
    const score = await askScoreJudge(
      llm,
      {
        role: 'judge',
        call: 'c',
        messages: [{ role: 'user', content: 'q' }],
        seed: 1,
        temperature: 1,
        topP: 1,
        maxTokens: 10,
      },
      'x/10',
    );
    expect(score).toMatchObject({ x: 8, value: 0.8 });
    expect(calls.map((r) => r.n)).toEqual([1]);
  });
});
