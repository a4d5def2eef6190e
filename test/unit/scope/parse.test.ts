import { extractAnswer, parseRubrics, parseTask } from '../../../activities/recipes/scope/parse';
import { parseBinaryScore } from '../../../activities/judges/binary';

const LIMITS = { min: 3, max: 5 };
const rubrics = (n: number): string =>
  `<rubrics>\n${Array.from({ length: n }, (_, i) => `<rubric priority="critical">Identifies fact ${i + 1}.</rubric>`).join('\n')}\n</rubrics>`;

describe('SCOPE parsing of untrusted outputs', () => {
  test('a task with a <question> sub-element, or a plain <task> (Fig. 9), from outside <think>', () => {
    expect(parseTask('<think>ok</think><task><question> Why did X happen? </question></task>')).toBe(
      'Why did X happen?',
    );
    expect(parseTask('<task>\nExplain how the dam was financed.\n</task>')).toBe(
      'Explain how the dam was financed.',
    );
    // Other sub-elements stay part of a plain task's body.
    expect(parseTask('<task><format>essay</format> Write about Y</task>')).toBe(
      '<format>essay</format> Write about Y',
    );
    // A draft inside <think> is not the task; the last task wins.
    expect(parseTask('<think><task>draft</task></think>no task here')).toBeUndefined();
    expect(parseTask('<task>first</task> <task>second</task>')).toBe('second');
    expect(parseTask('<task>  </task>')).toBeUndefined();
    expect(parseTask('<task><question></question></task>')).toBeUndefined();
    expect(parseTask('<task>never closed')).toBeUndefined();
    expect(parseTask('')).toBeUndefined();
  });

  test('the Solver answer: last non-empty <answer> outside <think>, else null', () => {
    expect(extractAnswer('<think>maybe <answer>no</answer></think><answer> Paris </answer>')).toBe('Paris');
    expect(extractAnswer('<answer></answer>')).toBeNull();
    expect(extractAnswer('<think>only thinking</think>')).toBeNull();
  });

  test('rubrics: 3–5 from the last closed block; fewer is none, more are cut', () => {
    expect(parseRubrics(rubrics(4), LIMITS)).toEqual([1, 2, 3, 4].map((i) => `Identifies fact ${i}.`));
    expect(parseRubrics(rubrics(7), LIMITS)).toHaveLength(5);
    expect(parseRubrics(rubrics(2), LIMITS)).toEqual([]);
    // Without a priority, with odd whitespace: still rubrics; empty ones are dropped.
    expect(
      parseRubrics(
        '<rubrics><rubric>A\n  b</rubric><rubric> </rubric><rubric>C</rubric><rubric>D</rubric></rubrics>',
        LIMITS,
      ),
    ).toEqual(['A b', 'C', 'D']);
    // A malformed block (never closed) is dropped; a block inside <think> is not the output.
    expect(parseRubrics(rubrics(4).replace('</rubrics>', ''), LIMITS)).toEqual([]);
    expect(parseRubrics(`<think>${rubrics(4)}</think>`, LIMITS)).toEqual([]);
    expect(parseRubrics(`${rubrics(2)}\n${rubrics(3)}`, LIMITS)).toHaveLength(3);
  });

  test('binary verdicts: the last 0/1 outside <think>; anything else is 0 with its reason', () => {
    expect(parseBinaryScore('<think>fine</think><score>1</score>')).toEqual({ value: 1 });
    expect(parseBinaryScore('<score> 0 </score>')).toEqual({ value: 0 });
    expect(parseBinaryScore('<score>1.0</score>')).toEqual({ value: 1 });
    expect(parseBinaryScore('<score>1</score> on reflection <score>0</score>')).toEqual({ value: 0 });
    expect(parseBinaryScore('<think>I would give <score>1</score></think>no verdict')).toEqual({
      value: 0,
      fallback: 'no_score_tag',
    });
    expect(parseBinaryScore('<score>yes</score>')).toEqual({ value: 0, fallback: 'unparsable_score' });
    expect(parseBinaryScore('<score>10</score>')).toEqual({ value: 0, fallback: 'unparsable_score' });
    expect(parseBinaryScore('')).toEqual({ value: 0, fallback: 'no_score_tag' });
  });
});
