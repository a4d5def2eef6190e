import type { ChatMessage } from '../../clients/trainer-contract';

/**
 * SSP's four prompts (ssp.md §4). The tags are exact (the parsers and the search loop read them); the rest
 * is paraphrased from the spec's description of the released templates.
 */

const PROPOSER_SYSTEM = (n: number, examples: readonly string[]): string =>
  [
    'You are an expert question creator. You are given an answer, and you must reverse-engineer a question ' +
      `whose answer it is and which requires exactly ${n} sequential searches to answer.`,
    '',
    'Procedure: work backwards from the answer. Do not search for the answer directly. Find an associated ' +
      'concept, search for the bridging information, and extract a unique, verifiable preceding fact: the ' +
      `answer to search #${n - 1}. Repeat until the chain has ${n} links; the first fact of the chain is the ` +
      "question's initial clue.",
    '',
    'Format:',
    '- Think inside <think> and </think> after every new piece of information.',
    '- Search with <search> query </search>; the results come back between <information> and </information>.',
    '- Give the final question inside <question> and </question>.',
    '',
    'Critical rules:',
    '1. Strictly fact-based: every clue must come from the information you retrieved.',
    '2. No spoilers: the question must not contain or reveal the answer.',
    '3. Search is mandatory: do not rely on memory alone.',
    `4. Adhere to the search count: answering the question must take ${n} searches.`,
    '5. Unique answer: the question must have exactly one correct answer, the given one.',
    ...(examples.length > 0 ? ['', 'Example questions:', ...examples.map((e, i) => `${i + 1}. ${e}`)] : []),
  ].join('\n');

/** §4 Proposer: the role and procedure as the system prompt, the answer and n as the user turn. */
export function proposerMessages(answer: string, n: number, examples: readonly string[]): ChatMessage[] {
  return [
    { role: 'system', content: PROPOSER_SYSTEM(n, examples) },
    {
      role: 'user',
      content:
        `The answer I provided is: ${answer}. You need to create a question that requires ${n} searches. ` +
        'Before you finish, check every requirement above, especially whether the question is too simple, ' +
        'and then give the final question as <question> ... </question>.',
    },
  ];
}

/** §4 Solver, the Search-R1 template. */
export function solverMessages(question: string): ChatMessage[] {
  return [
    { role: 'system', content: 'You are a helpful and harmless assistant.' },
    {
      role: 'user',
      content:
        'Answer the given question. You must conduct reasoning inside <think> and </think> first every time ' +
        'you get new information. After reasoning, if you find you lack some knowledge, you can call a search ' +
        'engine by <search> query </search>, and it will return the top searched results between ' +
        '<information> and </information>. You can search as many times as you want. If you find no further ' +
        'external knowledge needed, you can directly provide the answer inside <answer> and </answer>, without ' +
        `detailed illustrations. For example, <answer> Beijing </answer>. Question: ${question}`,
    },
  ];
}

/** §4 RAG verifier: no tags, a one-shot answer after "Answer:". */
export function ragVerifierMessages(materials: string, question: string): ChatMessage[] {
  return [
    {
      role: 'user',
      content:
        'Answer the given question based on the provided materials. You should first conduct very concise ' +
        'reasoning within 50 words, and then directly provide your answer without detailed illustrations ' +
        `after saying 'Answer:'.\n\nMaterials:\n${materials}\n\nQuestion: ${question}`,
    },
  ];
}

/** §4 Judge: semantic equivalence, "Correct" or "Wrong". */
export function judgeMessages(question: string, modelAnswer: string, reference: string): ChatMessage[] {
  return [
    {
      role: 'system',
      content:
        'You are a professional judge who evaluates the correctness of answers based on given criteria.',
    },
    {
      role: 'user',
      content: [
        `Question: ${question}`,
        `Model Answer: ${modelAnswer}`,
        `Reference Answer: ${reference}`,
        '',
        'The model answer is correct when:',
        '- its meaning is consistent with the reference answer;',
        '- numbers are equal or very close;',
        '- its core meaning is right, even if the wording or the language differs;',
        '- it contains the right answer without conflicting information.',
        '',
        'Please respond only with "Correct" or "Wrong".',
      ].join('\n'),
    },
  ];
}
