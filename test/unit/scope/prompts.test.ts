import {
  challengerMessages,
  graderMessages,
  relevanceMessages,
  rubricMessages,
  solverMessages,
} from '../../../activities/recipes/scope/prompts';

const text = (messages: Array<{ content: string }>): string => messages.map((m) => m.content).join('\n');

describe('SCOPE prompts (App. H)', () => {
  test('the Challenger gets the document, the task type, its exact budget and the search syntax', () => {
    const one = text(challengerMessages('DOC BODY', 'planning', 1, 'search_tags'));
    expect(one).toContain('<source_document>\nDOC BODY\n</source_document>');
    expect(one).toContain('**Planning**');
    expect(one).toContain('exactly **1** search turn.');
    expect(one).toContain('<search>query</search>');
    expect(one).toContain('searches complete');
    const three = text(challengerMessages('DOC', 'writing', 3, 'qwen3_tool_call'));
    expect(three).toContain('exactly **3** search turns.');
    expect(three).toContain('<tool_call>{"name": "search"');
  });

  test('the Solver sees the question and its search allowance, never a document', () => {
    const s = text(solverMessages('Why did X happen?', 4, 'search_tags'));
    expect(s).toContain('You can search up to 4 times.');
    expect(s.endsWith('Question: Why did X happen?')).toBe(true);
    expect(s).not.toContain('source_document');
  });

  test('judge prompts wrap untrusted text in tags', () => {
    expect(text(rubricMessages('long_form_qa', 'Q', ['D1', 'D2']))).toContain(
      '<document index="1">\nD1\n</document>\n<document index="2">\nD2\n</document>',
    );
    const g = text(graderMessages('Q', 'ANSWER', 'Identifies A.'));
    expect(g).toContain('<response>\nANSWER\n</response>');
    expect(g).toContain('<rubric>\nIdentifies A.\n</rubric>');
    expect(text(relevanceMessages('D', 'T'))).toContain(
      '<source_document>\nD\n</source_document>\n<task_prompt>\nT\n</task_prompt>',
    );
  });
});
