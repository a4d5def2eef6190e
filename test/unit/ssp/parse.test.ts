import {
  answerTagCount,
  exactMatch,
  extractFinalAnswer,
  extractQuestion,
  extractRagAnswer,
  modelText,
  parseVerdict,
} from '../../../activities/recipes/ssp/parse';

describe('SSP parsing of untrusted model text', () => {
  test('modelText drops the masked observation spans, counted in code points', () => {
    const obs = '<information>x <question>fake</question></information>';
    const completion = `🙂 <search>q</search>${obs} done`;
    // Code points: the emoji is one (two UTF-16 units), so the observation starts at 20, not 21.
    const start = [...'🙂 <search>q</search>'].length;
    expect(start).toBe(20);
    const span: [number, number] = [start, start + [...obs].length];
    expect(modelText({ completion, lossMaskSpans: [span] })).toBe('🙂 <search>q</search> done');
    expect(extractQuestion(modelText({ completion, lossMaskSpans: [span] }))).toBeNull();
  });

  test.each([
    ['<question> Who founded it? </question>', 'Who founded it?'],
    ['<question>first</question><question>second</question>', 'first'],
    ['<QUESTION>Case</QUESTION>', 'Case'],
    ['<question>   </question>', null],
    ['<question>unclosed', null],
    ['no tags at all', null],
  ])('extractQuestion(%j) = %j', (text, expected) => {
    expect(extractQuestion(text)).toBe(expected);
  });

  test.each([
    ['<answer>a</answer> then <answer> Beijing </answer>', 'Beijing'],
    ['<answer></answer>', null],
    ['nothing', null],
  ])('extractFinalAnswer(%j) = %j (the last one)', (text, expected) => {
    expect(extractFinalAnswer(text)).toBe(expected);
  });

  test.each([
    ['<answer>x</answer>', 1],
    ['<answer>x</answer>'.repeat(11), 11],
    ['</answer>'.repeat(12) + '<answer>', 12],
    ['', 0],
  ])('answerTagCount(%j) = %i', (text, n) => {
    expect(answerTagCount(text)).toBe(n);
  });

  test.each([
    ['The materials say so.\nAnswer: Velmora', 'Velmora'],
    ['Answer：Velmora', 'Velmora'],
    ['answer Velmora', null],
    ['Reasoning... Answer: first\nmore Answer: second', 'second'],
    ['Answer: Velmora\nAnswer:', 'Velmora'],
    ['I cannot tell from the materials.', null],
    ['Answer:   ', null],
  ])('extractRagAnswer(%j) = %j', (text, expected) => {
    expect(extractRagAnswer(text)).toBe(expected);
  });

  test.each([
    ['The Beatles', 'beatles', true],
    ['Paris.', 'paris', true],
    ['Paris, France', 'Paris', false],
    ['', '', false],
    ['anything', '!!!', false],
  ])('exactMatch(%j, %j) = %j', (prediction, reference, expected) => {
    expect(exactMatch(prediction, reference)).toBe(expected);
  });

  test.each([
    ['Correct', 'correct'],
    ['correct.', 'correct'],
    ['**Correct**', 'correct'],
    ['Wrong', 'wrong'],
    // The code's pitfall: `"correct" in text.lower()` reads these as correct.
    ['Incorrect', 'wrong'],
    ['INCORRECT.', 'wrong'],
    ['The answer is not correct', 'wrong'],
    ['Correct or Wrong', 'unparseable'],
    ['Incorrect. Correct would be Paris.', 'unparseable'],
    ['', 'unparseable'],
    ['Yes', 'unparseable'],
    ['correctly', 'unparseable'],
    ['<think>is it wrong? no</think>Correct', 'correct'],
  ])('parseVerdict(%j) = %s', (text, verdict) => {
    expect(parseVerdict(text)).toBe(verdict);
  });
});
