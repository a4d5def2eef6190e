import {
  extractLastJsonObject,
  parseChallengerOutput,
  parseTypeSelection,
  refersToDocument,
} from '../../../activities/recipes/spice/parse';

const MCQ = { format: 'mcq' } as const;
const INTEGER = { format: 'free_form', answerType: 'Integer' } as const;
const EXPRESSION = { format: 'free_form', answerType: 'Expression' } as const;
const STRING = { format: 'free_form', answerType: 'String' } as const;

const MC_QUESTION =
  'Question: A Carnot engine runs between 600 K and 300 K and its cold reservoir is then lowered to 200 K. ' +
  'By what factor does its efficiency grow?\nA) 1.25\nB) 1.33\nC) 1.50\nD) 2.00\nCorrect: B';

/** A Challenger output as models write it: thinking first, then the JSON object. */
const withThinking = (json: object): string =>
  `Let me think about the document. The key relation is {efficiency} = 1 - T_c/T_h.\n\n${JSON.stringify(json, null, 2)}`;

const mcqOutput = (fields: Record<string, unknown>): string =>
  withThinking({
    identified_answer: 'Efficiency ratio',
    answer_quote: ['efficiency is 1 - Tc/Th'],
    hardening_process: 'Requires two efficiency computations.',
    exam_question: 'How does the efficiency change?',
    correct_answer: '0.667/0.5 = 1.33',
    multiple_choice_question: MC_QUESTION,
    multiple_choice_correct: 'B',
    question_difficulty: 'Hard',
    ...fields,
  });

const freeFormOutput = (fields: Record<string, unknown>): string =>
  withThinking({
    identified_information: ['a', 'b', 'c'],
    question: 'A Carnot engine runs between 600 K and 300 K. What is its efficiency in percent?',
    answer: 50,
    answer_type: 'Integer',
    difficulty_level: 'Hard',
    ...fields,
  });

describe('extractLastJsonObject', () => {
  it('takes the last top-level object after thinking text', () => {
    expect(extractLastJsonObject('I think {"a": 1} is a draft.\nFinal: {"a": 2, "b": {"c": 3}}')).toEqual({
      a: 2,
      b: { c: 3 },
    });
  });

  it('reads objects inside code fences', () => {
    expect(extractLastJsonObject('Here it is:\n```json\n{"question": "Q?", "answer": 4}\n```\n')).toEqual({
      question: 'Q?',
      answer: 4,
    });
  });

  it('skips closed <think> blocks', () => {
    expect(extractLastJsonObject('<think>maybe {"answer": 1}</think>\n{"answer": 2}')).toEqual({ answer: 2 });
    expect(extractLastJsonObject('{"answer": 2}<think>on second thought {"answer": 3}</think>')).toEqual({
      answer: 2,
    });
  });

  it('is string-aware: braces inside strings do not end the object', () => {
    expect(extractLastJsonObject('{"q": "Is {x} a set? }", "a": "yes"} trailing } brace')).toEqual({
      q: 'Is {x} a set? }',
      a: 'yes',
    });
  });

  it('keeps LaTeX backslashes that are not JSON escapes', () => {
    const parsed = extractLastJsonObject(
      '{"answer": "\\frac{1}{2} \\times \\sqrt{x} \\neq \\beta", "n": "a\\nb"}',
    );
    expect(parsed).toEqual({ answer: '\\frac{1}{2} \\times \\sqrt{x} \\neq \\beta', n: 'a\nb' });
  });

  it('falls back to an earlier valid object when the last one is broken', () => {
    expect(extractLastJsonObject('{"a": 1}\n{"a": 2, "b": }')).toEqual({ a: 1 });
  });

  it('returns undefined without any parsable object', () => {
    expect(extractLastJsonObject('no json at all')).toBeUndefined();
    expect(extractLastJsonObject('{"a": 1')).toBeUndefined();
    expect(extractLastJsonObject('{not: json}')).toBeUndefined();
  });
});

describe('parseTypeSelection', () => {
  it('reads an MCQ choice', () => {
    const text =
      '{"suitable_for_mcq": true, "suitable_for_free_form": false, "best_answer_type": null, "reason": "rich"}';
    expect(parseTypeSelection(text)).toEqual({ ok: true, format: 'mcq' });
  });

  it('reads a free-form choice with its type, forgiving case', () => {
    const text =
      'Thinking...\n{"suitable_for_mcq": false, "suitable_for_free_form": true, "best_answer_type": "integer", "reason": "calc"}';
    expect(parseTypeSelection(text)).toEqual({ ok: true, format: 'free_form', answerType: 'Integer' });
  });

  it.each([
    [
      '{"suitable_for_mcq": true, "suitable_for_free_form": true, "best_answer_type": "String"}',
      'not_exactly_one_format',
    ],
    [
      '{"suitable_for_mcq": false, "suitable_for_free_form": false, "best_answer_type": null}',
      'not_exactly_one_format',
    ],
    ['{"suitable_for_mcq": "true", "suitable_for_free_form": false}', 'flags_not_boolean'],
    [
      '{"suitable_for_mcq": false, "suitable_for_free_form": true, "best_answer_type": null}',
      'bad_answer_type',
    ],
    [
      '{"suitable_for_mcq": false, "suitable_for_free_form": true, "best_answer_type": "Boolean"}',
      'bad_answer_type',
    ],
    ['I would choose MCQ.', 'no_json'],
  ])('rejects %j (%s)', (text, reason) => {
    expect(parseTypeSelection(text)).toEqual({ ok: false, reason });
  });
});

describe('parseChallengerOutput: MCQ', () => {
  it('accepts a well-formed MCQ and strips the Correct line from the question', () => {
    expect(parseChallengerOutput(mcqOutput({}), MCQ)).toEqual({
      ok: true,
      task: {
        format: 'mcq',
        answerKind: 'mcq',
        question: MC_QUESTION.replace('\nCorrect: B', ''),
        answer: 'B',
      },
    });
  });

  it('accepts inline options and strips an inline Correct label', () => {
    const parsed = parseChallengerOutput(
      mcqOutput({
        multiple_choice_question: 'Which ratio holds? A) 1:2 B) 2:3 C) 3:4 D) 4:5 Correct: C',
        multiple_choice_correct: '(C)',
      }),
      MCQ,
    );
    expect(parsed).toEqual({
      ok: true,
      task: {
        format: 'mcq',
        answerKind: 'mcq',
        question: 'Which ratio holds? A) 1:2 B) 2:3 C) 3:4 D) 4:5',
        answer: 'C',
      },
    });
  });

  it('keeps "correct:" inside the stem when it is not an answer label', () => {
    const question =
      'Which statement is correct: the first or the second?\nA) first\nB) second\nC) both\nD) neither';
    const parsed = parseChallengerOutput(mcqOutput({ multiple_choice_question: question }), MCQ);
    expect(parsed.ok && parsed.task.question).toBe(question);
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'empty question (document too simple)',
      { multiple_choice_question: '', multiple_choice_correct: '' },
      'missing_question',
    ],
    ['question as a list', { multiple_choice_question: [MC_QUESTION] }, 'question_not_string'],
    ['missing correct letter', { multiple_choice_correct: '' }, 'missing_answer'],
    ['letter outside A-D', { multiple_choice_correct: 'E' }, 'bad_choice_letter'],
    ['correct given as a number', { multiple_choice_correct: 2 }, 'bad_choice_letter'],
    ['correct given as option text', { multiple_choice_correct: '1.33' }, 'bad_choice_letter'],
    [
      'Correct line disagreeing with the field',
      { multiple_choice_question: MC_QUESTION.replace('Correct: B', 'Correct: D') },
      'conflicting_choice',
    ],
    ['three options', { multiple_choice_question: 'Q?\nA) 1\nB) 2\nC) 3\nCorrect: B' }, 'bad_options'],
    [
      'five options',
      { multiple_choice_question: 'Q?\nA) 1\nB) 2\nC) 3\nD) 4\nE) 5\nCorrect: B' },
      'bad_options',
    ],
    [
      'duplicate options',
      { multiple_choice_question: 'Q?\nA) 1.33\nB) 1.5\nC) 1.33.\nD) 2\nCorrect: B' },
      'bad_options',
    ],
    ['an empty option', { multiple_choice_question: 'Q?\nA) 1\nB) \nC) 3\nD) 4\nCorrect: B' }, 'bad_options'],
    ['options out of order', { multiple_choice_question: 'Q?\nB) 2\nA) 1\nC) 3\nD) 4' }, 'bad_options'],
    ['no stem', { multiple_choice_question: 'Question:\nA) 1\nB) 2\nC) 3\nD) 4' }, 'missing_question'],
    [
      'reference to the text',
      { multiple_choice_question: 'According to the text, which value holds?\nA) 1\nB) 2\nC) 3\nD) 4' },
      'refers_to_document',
    ],
    [
      'option marked correct',
      { multiple_choice_question: 'Which value holds?\nA) 1\nB) 2 (correct)\nC) 3\nD) 4' },
      'answer_leak',
    ],
  ])('rejects %s', (_name, fields, reason) => {
    expect(parseChallengerOutput(mcqOutput(fields), MCQ)).toEqual({ ok: false, reason });
  });

  it('rejects output with no JSON', () => {
    expect(parseChallengerOutput('Question: ...\nA) 1\nB) 2\nC) 3\nD) 4\nCorrect: A', MCQ)).toEqual({
      ok: false,
      reason: 'no_json',
    });
  });

  it('rejects output truncated inside the JSON', () => {
    const truncated = mcqOutput({}).slice(0, -40);
    expect(parseChallengerOutput(truncated, MCQ)).toEqual({ ok: false, reason: 'no_json' });
  });
});

describe('parseChallengerOutput: free form', () => {
  it('accepts an Integer answer given as a number or a string', () => {
    const expected = {
      ok: true,
      task: {
        format: 'free_form',
        answerKind: 'integer',
        question: 'A Carnot engine runs between 600 K and 300 K. What is its efficiency in percent?',
        answer: '50',
      },
    };
    expect(parseChallengerOutput(freeFormOutput({}), INTEGER)).toEqual(expected);
    expect(parseChallengerOutput(freeFormOutput({ answer: '50' }), INTEGER)).toEqual(expected);
    const fenced = '```json\n' + JSON.stringify({ question: expected.task.question, answer: 50 }) + '\n```';
    expect(parseChallengerOutput(fenced, INTEGER)).toEqual(expected);
  });

  it('accepts Integer answers with separators or a zero decimal part', () => {
    expect(parseChallengerOutput(freeFormOutput({ answer: '1,000' }), INTEGER).ok).toBe(true);
    expect(parseChallengerOutput(freeFormOutput({ answer: 42.0 }), INTEGER).ok).toBe(true);
  });

  it('accepts an Expression answer with LaTeX inside the JSON string', () => {
    const raw =
      'Thinking done.\n{"question": "Give the efficiency of a Carnot engine as a function of T_c and T_h.", ' +
      '"answer": "1 - \\frac{T_c}{T_h}", "answer_type": "Expression"}';
    expect(parseChallengerOutput(raw, EXPRESSION)).toEqual({
      ok: true,
      task: {
        format: 'free_form',
        answerKind: 'expression',
        question: 'Give the efficiency of a Carnot engine as a function of T_c and T_h.',
        answer: '1 - \\frac{T_c}{T_h}',
      },
    });
  });

  it('accepts a short String answer and a boolean as a String', () => {
    expect(parseChallengerOutput(freeFormOutput({ answer: 'Carnot cycle' }), STRING)).toMatchObject({
      ok: true,
      task: { answerKind: 'string', answer: 'Carnot cycle' },
    });
    expect(parseChallengerOutput(freeFormOutput({ answer: true }), STRING)).toMatchObject({
      ok: true,
      task: { answer: 'true' },
    });
  });

  it.each<[string, Record<string, unknown>, typeof INTEGER | typeof EXPRESSION | typeof STRING, string]>([
    ['empty question', { question: '', answer: '' }, INTEGER, 'missing_question'],
    ['whitespace question', { question: '   ' }, INTEGER, 'missing_question'],
    ['missing question field', { question: undefined }, INTEGER, 'missing_question'],
    ['question list', { question: ['What is 2+2?'] }, INTEGER, 'question_not_string'],
    [
      'several questions as a list',
      { question: ['Q1: What is x?', 'Q2: What is y?'] },
      INTEGER,
      'question_not_string',
    ],
    [
      'several questions in one string',
      { question: 'Q1: What is the efficiency at 600 K? Q2: What is it at 900 K?' },
      INTEGER,
      'multiple_questions',
    ],
    [
      'numbered questions on lines',
      { question: '1. What is the efficiency at 600 K?\n2. What is it at 900 K?' },
      INTEGER,
      'multiple_questions',
    ],
    ['empty answer', { answer: '' }, INTEGER, 'missing_answer'],
    ['null answer', { answer: null }, INTEGER, 'missing_answer'],
    ['list answer', { answer: [42] }, INTEGER, 'answer_not_scalar'],
    ['dict answer', { answer: { value: 42 } }, INTEGER, 'answer_not_scalar'],
    ['nested answer', { answer: { answer: 'Paris' } }, STRING, 'answer_not_scalar'],
    ['fraction for Integer', { answer: '3.5' }, INTEGER, 'wrong_answer_type'],
    ['words for Integer', { answer: 'fifty' }, INTEGER, 'wrong_answer_type'],
    ['units for Integer', { answer: '50 percent' }, INTEGER, 'wrong_answer_type'],
    ['unparsable Expression', { answer: '\\frac{1}{' }, EXPRESSION, 'wrong_answer_type'],
    ['Expression that is a list', { answer: '[1, 2]' }, EXPRESSION, 'wrong_answer_type'],
    ['four-word String', { answer: 'the second law of thermodynamics' }, STRING, 'answer_too_long'],
    [
      'question citing the passage',
      { question: 'In the passage, what efficiency does the engine reach in percent?' },
      INTEGER,
      'refers_to_document',
    ],
    [
      'question citing the document',
      { question: 'What efficiency, as the document states, does the engine reach?' },
      INTEGER,
      'refers_to_document',
    ],
  ])('rejects %s', (_name, fields, request, reason) => {
    expect(parseChallengerOutput(freeFormOutput(fields), request)).toEqual({ ok: false, reason });
  });
});

describe('refersToDocument', () => {
  it.each([
    'According to the text, what is the efficiency?',
    'Based on the passage, which gas is used?',
    'As stated in the article, what is the efficiency?',
    'The passage states that X doubles. What is Y?',
    'The given document describes an engine. What is its efficiency?',
    'As mentioned above, the engine runs at 600 K. What is its efficiency?',
    'What is the main idea of the excerpt?',
    'According to the author, what limits efficiency?',
    'What does the author argue about heat engines?',
    'Using the information from this document, compute the ratio.',
  ])('flags %j', (question) => {
    expect(refersToDocument(question)).toBe(true);
  });

  it.each([
    'In the text of the Magna Carta, which clause limits taxation?',
    'Which article (a, an or the) precedes a vowel sound?',
    'A sheet of paper is folded 7 times. How many layers result?',
    'Light from the source travels 3 m. How long does it take?',
    'Who is the author of the Principia?',
    'What is the efficiency of a Carnot engine between 600 K and 300 K?',
    'A text message costs 5 cents. How much do 20 cost?',
  ])('passes %j', (question) => {
    expect(refersToDocument(question)).toBe(false);
  });
});
