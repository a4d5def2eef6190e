import type { LlmCaller } from '../../../activities/clients/inference';
import { runSearchLoop } from '../../../activities/tools/search-loop';
import { countTokens } from '../../../activities/retrieval/tokens';
import { fakeLlm, fakeRetriever, memoryCheckpoint } from '../../support/search-fakes';
import type { Retriever, SearchLoopSpec, Trajectory } from '../../../activities/tools/types';

const PROMPT = [
  { role: 'system' as const, content: 'You are a helpful and harmless assistant.' },
  { role: 'user' as const, content: 'Question: who wrote the novel?' },
];

function spec(llm: LlmCaller, retriever: Retriever, overrides: Partial<SearchLoopSpec> = {}): SearchLoopSpec {
  return {
    llm,
    retriever,
    messages: PROMPT,
    role: 'solver',
    call: 'test.solver',
    seed: 7,
    temperature: 1,
    topP: 1,
    syntax: 'search_tags',
    finalTags: ['answer'],
    maxTurns: 10,
    maxTokens: 8192,
    topK: 3,
    passageTokens: 500,
    ...overrides,
  };
}

/** The text of each masked span, cut by code points as the trainer (Python) cuts. */
const masked = (t: Trajectory): string[] =>
  t.lossMaskSpans.map(([s, e]) => [...t.completion].slice(s, e).join(''));

const TAIL = ' and more text the engine would have cut';

describe('runSearchLoop', () => {
  test('search tags: searches, observations in Search-R1 format, a final answer, one continued message', async () => {
    const { llm, requests } = fakeLlm([
      `<think>first</think>\n<search> capital of France </search>${TAIL}`,
      `<think>then</think>\n<search>Paris population</search>${TAIL}`,
      `<think>done</think>\n<answer>Paris</answer>${TAIL}`,
    ]);
    const retriever = fakeRetriever({
      'capital of France': [
        { id: 'a', title: 'France', text: 'Its capital is Paris.', score: 2 },
        { id: 'b', text: 'Untitled passage.', score: 1 },
      ],
    });
    const t = await runSearchLoop(spec(llm, retriever));

    expect(t.stop).toBe('final');
    expect(t.searches).toEqual(['capital of France', 'Paris population']);
    expect(retriever.queries).toEqual(t.searches);
    expect(t.passages.map((p) => p.id)).toEqual(['a', 'b', 'doc-Paris population']);
    const first =
      '\n<information>\nDoc 1 (Title: "France") Its capital is Paris.\nDoc 2 Untitled passage.\n</information>\n\n';
    expect(t.turns[0]).toMatchObject({
      text: '<think>first</think>\n<search> capital of France </search>',
      search: { query: 'capital of France', valid: true },
      observation: first,
      answeredWith: 'results',
    });
    expect(t.completion).toBe(
      '<think>first</think>\n<search> capital of France </search>' +
        first +
        '<think>then</think>\n<search>Paris population</search>' +
        '\n<information>\nDoc 1 (Title: "Paris population") About Paris population.\n</information>\n\n' +
        '<think>done</think>\n<answer>Paris</answer>',
    );
    expect(masked(t)).toEqual(t.turns.flatMap((turn) => (turn.observation ? [turn.observation] : [])));

    // Turn 0 is a plain request; every later one continues the trajectory so far as the assistant's message.
    expect(requests[0]?.messages).toEqual(PROMPT);
    expect(requests[0]?.continueFinalMessage).toBe(false);
    for (const [i, req] of requests.entries()) {
      expect(req.stop).toEqual(['</search>', '</answer>']);
      expect(req.n).toBe(1);
      if (i === 0) continue;
      expect(req.continueFinalMessage).toBe(true);
      expect(req.messages.slice(0, 2)).toEqual(PROMPT);
      expect(req.messages[2]?.role).toBe('assistant');
      expect(t.completion.startsWith(req.messages[2]?.content ?? '')).toBe(true);
      expect(req.messages[2]?.content.endsWith('</information>\n\n')).toBe(true);
    }
  });

  test('seeds differ per turn and are the same when the loop runs again', async () => {
    const turns = ['<search>a</search>', '<search>b</search>', '<answer>x</answer>'];
    const one = fakeLlm(turns);
    const two = fakeLlm(turns);
    await runSearchLoop(spec(one.llm, fakeRetriever()));
    await runSearchLoop(spec(two.llm, fakeRetriever()));
    const seeds = one.requests.map((r) => r.seed);
    expect(new Set(seeds).size).toBe(3);
    expect(two.requests.map((r) => r.seed)).toEqual(seeds);
    const other = fakeLlm(turns);
    await runSearchLoop(spec(other.llm, fakeRetriever(), { seed: 8 }));
    expect(other.requests.map((r) => r.seed)).not.toEqual(seeds);
  });

  test('qwen3 tool calls: JSON arguments (object or string), garbage answered with an error, not a crash', async () => {
    const { llm, requests } = fakeLlm([
      '<tool_call>{"name": "search", "arguments": {"query": "first query"}}</tool_call>',
      '<tool_call>{"name": "search", "arguments": "{\\"query\\": \\"second\\"}"}</tool_call>',
      '<tool_call>{"name": "search", "arguments": {"query": </tool_call>',
      '<tool_call>{"name": "browse", "arguments": {"url": "x"}}</tool_call>',
      '<tool_call>["search"]</tool_call>',
      '<answer>done</answer>',
    ]);
    const retriever = fakeRetriever();
    const t = await runSearchLoop(spec(llm, retriever, { syntax: 'qwen3_tool_call' }));
    expect(requests[0]?.stop).toEqual(['</tool_call>', '</answer>']);
    expect(t.stop).toBe('final');
    expect(t.searches).toEqual(['first query', 'second']);
    expect(retriever.queries).toEqual(['first query', 'second']);
    expect(t.turns.map((turn) => turn.search?.valid)).toEqual([true, true, false, false, false, undefined]);
    expect(t.turns.map((turn) => turn.answeredWith)).toEqual([
      'results',
      'results',
      'error',
      'error',
      'error',
      undefined,
    ]);
    expect(t.turns[2]?.observation).toBe(
      '\n<information>\nInvalid search: the tool call is not a JSON object. Write a search as ' +
        '<tool_call>{"name": "search", "arguments": {"query": "..."}}</tool_call>.\n</information>\n\n',
    );
    expect(t.turns[3]?.observation).toContain('unknown tool "browse"');
    expect(masked(t)).toHaveLength(5);
  });

  test('an empty or oversized search is invalid, counted, and never reaches the retriever', async () => {
    const { llm } = fakeLlm([
      '<search>   </search>',
      `<search>${'q'.repeat(1001)}</search>`,
      '<search>fine</search>',
      '<answer>x</answer>',
    ]);
    const retriever = fakeRetriever();
    const t = await runSearchLoop(spec(llm, retriever));
    expect(t.turns.filter((turn) => turn.search && !turn.search.valid)).toHaveLength(2);
    expect(t.turns[0]?.observation).toContain(
      'Invalid search: the query is empty. Write a search as <search>query</search>.',
    );
    expect(t.turns[1]?.observation).toContain('longer than 1000 characters');
    expect(retriever.queries).toEqual(['fine']);
    expect(t.searches).toEqual(['fine']);
  });

  test('turn budget: the last allowed turn ends the trajectory, its search is not run', async () => {
    const { llm, requests } = fakeLlm(Array.from({ length: 10 }, (_, i) => `<search>q${i}</search>`));
    const retriever = fakeRetriever();
    const t = await runSearchLoop(spec(llm, retriever, { maxTurns: 3 }));
    expect(t.stop).toBe('max_turns');
    expect(requests).toHaveLength(3);
    expect(retriever.queries).toEqual(['q0', 'q1']);
    expect(t.turns[2]).toMatchObject({ search: { query: 'q2', valid: true } });
    expect(t.turns[2]?.observation).toBeUndefined();
    expect(t.completion.endsWith('<search>q2</search>')).toBe(true);
  });

  test('token budget: counts usage when reported, observations estimated; the rest is the next max_tokens', async () => {
    const obs = '\n<information>\nDoc 1 (Title: "a") About a.\n</information>\n\n';
    const obsTokens = Math.ceil([...obs].length / 4);
    const { llm, requests } = fakeLlm([
      { content: '<search>a', finishReason: 'stop', completionTokens: 30 },
      { content: 'x'.repeat(200), finishReason: 'length', completionTokens: 56 },
    ]);
    const t = await runSearchLoop(spec(llm, fakeRetriever(), { maxTokens: 100 }));
    expect(t.turns[0]?.observation).toBe(obs);
    expect(t.turns[0]?.tokens).toBe(30 + obsTokens);
    expect(requests.map((r) => r.maxTokens)).toEqual([100, 100 - 30 - obsTokens]);
    expect(t.stop).toBe('max_tokens');
    expect(t.turns[1]?.text).toBe('x'.repeat(200)); // nothing restored after a length cut
  });

  test('token budget spent by a search turn: the search is not run', async () => {
    const { llm } = fakeLlm([{ content: '<search>a', finishReason: 'stop', completionTokens: 64 }]);
    const retriever = fakeRetriever();
    const t = await runSearchLoop(spec(llm, retriever, { maxTokens: 64 }));
    expect(t.stop).toBe('max_tokens');
    expect(retriever.queries).toEqual([]);
    expect(t.lossMaskSpans).toEqual([]);
  });

  test('without usage, tokens are estimated at one per 4 code points', async () => {
    const { llm } = fakeLlm(['<search>😀😀😀</search>', '<answer>x</answer>']);
    const t = await runSearchLoop(spec(llm, fakeRetriever()));
    const first = t.turns[0];
    expect(first?.tokens).toBe(
      Math.ceil([...'<search>😀😀😀'].length / 4) + Math.ceil([...(first?.observation ?? '')].length / 4),
    );
  });

  test('searchLimit: further searches get the notice instead of results', async () => {
    const { llm } = fakeLlm([
      '<search>one</search>',
      '<search></search>',
      '<search>two</search>',
      '<search>three</search>',
      '<think>ok</think><task>Write a plan.</task>',
    ]);
    const retriever = fakeRetriever();
    const t = await runSearchLoop(
      spec(llm, retriever, { finalTags: ['task'], searchLimit: { after: 2, notice: 'Searches complete.' } }),
    );
    expect(retriever.queries).toEqual(['one', 'two']);
    expect(t.searches).toEqual(['one', 'two']);
    expect(t.turns.map((turn) => turn.answeredWith)).toEqual([
      'results',
      'error',
      'results',
      'notice',
      undefined,
    ]);
    expect(t.turns[3]?.observation).toBe('\n<information>\nSearches complete.\n</information>\n\n');
    expect(t.turns[3]?.search).toEqual({ query: 'three', valid: true });
    expect(t.stop).toBe('final');
  });

  test('a final tag ends the trajectory; its cut closing tag is restored; other tags do not end it', async () => {
    const { llm, requests } = fakeLlm([
      '<think>I will ask.</think><answer>not a final tag here</answer><search>x</search>',
      '<think>Now.</think>\n<question>Which river?</question> trailing',
    ]);
    const t = await runSearchLoop(spec(llm, fakeRetriever(), { finalTags: ['question'] }));
    expect(requests[0]?.stop).toEqual(['</search>', '</question>']);
    expect(t.stop).toBe('final');
    expect(t.turns[1]?.text).toBe('<think>Now.</think>\n<question>Which river?</question>');
    expect(t.completion.endsWith('<question>Which river?</question>')).toBe(true);
  });

  test('an unclosed call at end of sequence is closed and run; a turn with no call or final tag ends it', async () => {
    const closed = fakeLlm(['<think>x</think><search>open call', 'I have nothing more to say.']);
    const retriever = fakeRetriever();
    const t = await runSearchLoop(spec(closed.llm, retriever));
    expect(t.turns[0]?.text).toBe('<think>x</think><search>open call</search>');
    expect(retriever.queries).toEqual(['open call']);
    expect(t.stop).toBe('no_final');
    expect(closed.requests).toHaveLength(2);
  });

  test('mask spans count code points: emoji and other non-BMP text before and inside observations', async () => {
    const { llm } = fakeLlm([
      '<think>🦜 parrots 𝔸</think><search>🦜</search>',
      '<think>more 😀</think><search>second</search>',
      '<answer>𝔸😀</answer>',
    ]);
    const retriever = fakeRetriever({
      '🦜': [{ id: 'p', title: 'Pärrot 🦜', text: 'Birds 🐦 talk.', score: 1 }],
    });
    const t = await runSearchLoop(spec(llm, retriever));
    const observations = t.turns.flatMap((turn) => (turn.observation ? [turn.observation] : []));
    expect(masked(t)).toEqual(observations);
    // In UTF-16 units the same numbers would cut elsewhere: the spans are not JavaScript string indices.
    const [s, e] = t.lossMaskSpans[1] ?? [0, 0];
    expect(t.completion.slice(s, e)).not.toBe(observations[1]);
    // Everything outside the spans is exactly the model's text.
    const points = [...t.completion];
    const unmasked = points.filter((_, i) => !t.lossMaskSpans.some(([a, b]) => a <= i && i < b)).join('');
    expect(unmasked).toBe(t.turns.map((turn) => turn.text).join(''));
  });

  test('resumes from a checkpoint: finished turns are not requested again and the result is the same', async () => {
    const turns = [
      '<think>a</think><search>one</search>',
      '<think>b</think><search>two</search>',
      '<think>c</think><search>three</search>',
      '<answer>done</answer>',
    ];
    const full = fakeLlm(turns);
    const whole = await runSearchLoop(spec(full.llm, fakeRetriever()));

    const checkpoint = memoryCheckpoint();
    const crashing = fakeLlm(turns.slice(0, 2)); // the worker dies while turn 2 is being sampled
    await expect(runSearchLoop(spec(crashing.llm, fakeRetriever(), { checkpoint }))).rejects.toThrow(
      'no scripted turn 2',
    );
    expect(checkpoint.saved.map((t) => t.turns.length)).toEqual([1, 2]);

    const resumed = fakeLlm(turns.slice(2));
    const retriever = fakeRetriever();
    const t = await runSearchLoop(spec(resumed.llm, retriever, { checkpoint }));
    // Exactly the requests an uninterrupted run sends for the turns left: same prefixes, same seeds.
    expect(resumed.requests).toEqual(full.requests.slice(2));
    expect(retriever.queries).toEqual(['three']);
    expect(t).toEqual(whole);
    expect(checkpoint.saved.at(-1)).toEqual(whole);

    // A finished trajectory in the checkpoint is returned as it is, without any request.
    const idle = fakeLlm([]);
    expect(await runSearchLoop(spec(idle.llm, fakeRetriever(), { checkpoint }))).toEqual(whole);
    expect(idle.requests).toHaveLength(0);
  });
  test('responseTokens caps the passages of one search in all, in rank order, not each passage', async () => {
    const words = (n: number, w: string): string => Array.from({ length: n }, () => w).join(' ');
    const found = [
      { id: 'a', text: words(300, 'alpha'), score: 3 },
      { id: 'b', text: words(300, 'beta'), score: 2 },
      { id: 'c', text: words(300, 'gamma'), score: 1 },
    ];
    const turns = ['<search>q</search>', '<answer>x</answer>'];
    const capped = await runSearchLoop(
      spec(fakeLlm(turns).llm, fakeRetriever({ q: found }), { responseTokens: 500 }),
    );
    expect(capped.passages.map((p) => [p.id, countTokens(p.text)])).toEqual([
      ['a', 300],
      ['b', 200],
    ]);
    expect(capped.turns[0]?.observation).toContain(`Doc 2 ${words(200, 'beta')}\n</information>`);
    // Without it each passage keeps its own 500-token budget: all three come back whole.
    const uncapped = await runSearchLoop(spec(fakeLlm(turns).llm, fakeRetriever({ q: found })));
    expect(uncapped.passages.map((p) => countTokens(p.text))).toEqual([300, 300, 300]);
  });
});
