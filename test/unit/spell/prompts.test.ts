import {
  EMPTY_CONTEXT,
  questionerMessages,
  responderMessages,
  verifierMessages,
} from '../../../activities/recipes/spell/prompts';
import type { SpellQuestion, SpellTask } from '../../../activities/recipes/spell/records';

const text = (task: SpellTask, examples: Array<{ question: string; answer: string }> = [], letter?: 'C') =>
  questionerMessages(task, 'DOC-1\nDOC-2', examples, letter)[0]?.content ?? '';
const principle = (prompt: string, n: number): string =>
  new RegExp(`^${n}\\. \\*\\*([^*]+)\\*\\*`, 'm').exec(prompt)?.[1] ?? '';

describe('questioner templates (appendix E)', () => {
  test.each([
    ['general_qa', 6, 5, 'Answer & Step-by-Step Derivation:'],
    ['financial_math', 7, 3, 'Step-by-Step Derivation:'],
    ['multiple_choice', 6, 5, 'Answer and Explanation Requirements:'],
  ] as const)(
    '%s: %i principles, the escalation inserted after principle %i with history',
    (task, count, at, last) => {
      const without = text(task);
      expect(principle(without, count)).toBe(last);
      expect(principle(without, count + 1)).toBe('');
      expect(without).not.toContain('Escalate Question Difficulty');
      expect(without).not.toContain('Previous Examples');

      const withHistory = text(task, [{ question: 'Q1?', answer: 'A1' }]);
      expect(principle(withHistory, at + 1)).toBe('Escalate Question Difficulty:');
      expect(principle(withHistory, count + 1)).toBe(last);
      expect(withHistory).toContain('fundamentally different and more complex than the provided examples');
    },
  );

  test('every template ends its instructions with the JSON contract and wraps the context in <text>', () => {
    for (const task of ['general_qa', 'financial_math', 'multiple_choice'] as const) {
      const prompt = text(task);
      expect(prompt).toContain(
        'Your response must conclude with a JSON object containing the following keys:',
      );
      expect(prompt).toContain('<text>\nDOC-1\nDOC-2\n</text>');
    }
    expect(text('general_qa')).toContain('"answer": "<A concise answer, under 20 tokens>"');
    expect(text('financial_math')).toContain('"answer": "<A single, non-zero numerical answer>"');
  });

  test('the escalation types differ between document and financial tasks', () => {
    expect(text('general_qa', [{ question: 'q', answer: 'a' }])).toContain(
      'Comparative & Superlative Analysis',
    );
    expect(text('financial_math', [{ question: 'q', answer: 'a' }])).toContain(
      'Period-over-Period Calculation',
    );
  });

  test('history examples go under ## Previous Examples, oldest first', () => {
    const prompt = text('general_qa', [
      { question: 'Q1?', answer: 'A1' },
      { question: 'Q2?', answer: 'A2' },
    ]);
    expect(
      prompt.endsWith(
        '## Previous Examples\n### Example 1:\nQuestion: Q1?\nAnswer: A1\n### Example 2:\nQuestion: Q2?\nAnswer: A2',
      ),
    ).toBe(true);
  });

  test('MC asks for the chosen letter instead of the <correct_answer> placeholder', () => {
    const prompt = text('multiple_choice', [], 'C');
    expect(prompt).toContain('The correct answer must be `C`.');
    expect(prompt).toContain('"answer": "C"');
    expect(prompt).not.toContain('<correct_answer>');
  });
});

describe('responder and verifier templates', () => {
  const qa: SpellQuestion = { task: 'general_qa', question: 'Where?', answer: 'Velmont' };
  const math: SpellQuestion = { task: 'financial_math', question: 'How much?', answer: '12' };
  const mc: SpellQuestion = {
    task: 'multiple_choice',
    question: 'Which?',
    answer: 'B',
    options: { A: 'one', B: 'two', C: 'three', D: 'four' },
  };

  test('general QA and MC end with "The correct answer is", financial math with "Therefore, the answer is"', () => {
    expect(responderMessages(qa, 'DOCS')[0]?.content).toBe(
      'Please read the following text and answer the question below.\n\n<text>\nDOCS\n</text>\nQuestion: Where?\n' +
        'Format your answer as follows: "The correct answer is (insert answer here)."',
    );
    expect(responderMessages(mc, 'DOCS')[0]?.content).toContain(
      'Question: What is the correct answer to this question: Which?\nChoices:\n(A) one\n(B) two\n(C) three\n(D) four\n',
    );
    expect(responderMessages(math, 'DOCS')[0]?.content).toMatch(
      /^You are an expert in document analysis and numeric reasoning[\s\S]*Therefore, the answer is \(insert answer here\)\."$/,
    );
  });

  test('the grounding probe has "Empty" for documents; the verifier sees no documents at all', () => {
    expect(responderMessages(qa, EMPTY_CONTEXT)[0]?.content).toContain('<text>\nEmpty\n</text>');
    const verifier = verifierMessages(mc, '(B)')[0]?.content ?? '';
    expect(verifier).toContain('- Problem: Which?\n(A) one');
    expect(verifier).toContain('- Answer 1: (B)\n- Answer 2: B');
    expect(verifier).toContain('±0.15% tolerance');
    expect(verifier).not.toContain('<text>');
  });
});
