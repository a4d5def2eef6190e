import {
  freeFormChallengerMessages,
  mcqChallengerMessages,
  reasonerMessages,
  typeSelectionMessages,
  wrapDocument,
} from '../../../activities/recipes/spice/prompts';

const DOC = 'The Carnot efficiency is 1 - T_c/T_h.';

const userContent = (messages: { role: string; content: string }[]): string => {
  const user = messages.find((m) => m.role === 'user');
  if (user === undefined) throw new Error('no user message');
  return user.content;
};

describe('reasonerMessages (Fig. 8)', () => {
  it('qwen: system prompt plus the question and the boxed instruction', () => {
    expect(reasonerMessages('What is 2+2?', 'qwen')).toEqual([
      { role: 'system', content: 'You are a helpful assistant.' },
      {
        role: 'user',
        content: 'What is 2+2?\n\nPlease reason step by step, and put your final answer within \\boxed{}.',
      },
    ]);
  });

  it('octothinker: one user message carrying the conversation template', () => {
    expect(reasonerMessages('What is 2+2?', 'octothinker')).toEqual([
      {
        role: 'user',
        content:
          'A conversation between User and Assistant. The user asks a question, and the Assistant solves it. ' +
          'The assistant first thinks about the reasoning process in the mind and then provides the user with the answer.' +
          '\n\nUser: What is 2+2?\nYou must put your answer inside \\boxed{}.\n\nAssistant:',
      },
    ]);
  });
});

describe('Challenger prompts (Figs. 9 and 10)', () => {
  it('wraps the document with the paper markers', () => {
    expect(wrapDocument('abc')).toBe('[BEGINNING OF THE DOCUMENT] abc [END OF THE DOCUMENT]');
  });

  it('type selection embeds the document and asks for the four JSON fields', () => {
    const messages = typeSelectionMessages(DOC);
    expect(messages[0]).toEqual({ role: 'system', content: 'You are a helpful assistant.' });
    const text = userContent(messages);
    expect(text).toContain(`Document:\n${DOC}\n`);
    for (const field of [
      '"suitable_for_mcq"',
      '"suitable_for_free_form"',
      '"best_answer_type"',
      '"reason"',
    ]) {
      expect(text).toContain(field);
    }
    expect(text).toContain('2. Exactly ONE of suitable_for_mcq or suitable_for_free_form must be true');
    expect(text).toContain('5. Keep reason under 100 characters');
  });

  it('the MCQ prompt carries the document, the 8 steps, the format and the output fields', () => {
    const text = userContent(mcqChallengerMessages(DOC));
    expect(text).toContain(wrapDocument(DOC));
    for (let step = 1; step <= 8; step++) expect(text).toContain(`### Step ${step}:`);
    expect(text).toContain('A) [Balanced length option]\nB) [Balanced length option]');
    expect(text).toContain('Correct: [Letter]');
    expect(text).toContain('Questions must be 100% self-contained and standalone');
    expect(text).toContain('(±20%)');
    for (const field of ['multiple_choice_question', 'multiple_choice_correct', 'question_difficulty']) {
      expect(text).toContain(`\`"${field}"\``);
    }
  });

  it('the free-form prompt fills in the answer type everywhere', () => {
    const text = userContent(freeFormChallengerMessages(DOC, 'Expression'));
    expect(text).toContain(wrapDocument(DOC));
    expect(text).toContain('You must generate a question with answer type: Expression');
    expect(text).toContain('### Step 1: Complex Information Extraction for Expression');
    expect(text).toContain('`"answer_type"`: Must be exactly "Expression"');
    expect(text).not.toMatch(/\banswer_type\b(?!")/);
    expect(text).toContain('6. For String answers: MAXIMUM 3 words');
    expect(text).toContain('- answer: {"value": 42} - Don\'t wrap in dict!');
  });

  it('uses the OctoThinker wrapper for the Challenger when asked', () => {
    const [only, ...rest] = mcqChallengerMessages(DOC, 'octothinker');
    expect(rest).toEqual([]);
    expect(only?.role).toBe('user');
    expect(only?.content.startsWith('A conversation between User and Assistant.')).toBe(true);
    expect(only?.content.endsWith('\n\nAssistant:')).toBe(true);
    expect(only?.content).toContain(wrapDocument(DOC));
  });
});
