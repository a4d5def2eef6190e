import { ContextLengthExceeded, InferenceEndpoint } from '../../../activities/clients/inference';
import { CALL_HEADER } from '../../../activities/clients/llm-protocol';
import { runSearchLoop, trajectoryTokenFields } from '../../../activities/tools/search-loop';
import { logprobOf, tokenIdsOf } from '../../support/scripted-llm/token-ids';
import type { Retriever, SearchLoopSpec, Trajectory } from '../../../activities/tools/types';
import { memoryCheckpoint } from '../../support/search-fakes';
import { SEARCH_DEMO_CALL } from '../../support/scripted-llm/search-agent';
import { approxTokens, startScriptedLlm, type ScriptedLlm } from '../../support/scripted-llm/server';

/** The loop through the real OpenAI-compatible client against the scripted search agent over HTTP. */
describe('runSearchLoop over HTTP', () => {
  let llm: ScriptedLlm;
  beforeEach(async () => {
    llm = await startScriptedLlm({ passRate: { min: 1, max: 1 } });
  });
  afterEach(() => llm.close());

  const retriever: Retriever = {
    name: 'fake',
    search: (query) =>
      Promise.resolve([{ id: query, title: query, text: `Facts about ${query}.`, score: 1 }]),
  };

  function spec(lines: string[], overrides: Partial<SearchLoopSpec> = {}): SearchLoopSpec {
    const endpoint = new InferenceEndpoint({
      baseUrl: llm.url,
      model: 'scripted-policy',
      apiKey: 'EMPTY',
      maxConcurrentCompletions: 8,
      supportsN: true,
      requestTimeoutMs: 5_000,
      maxRetries: 2,
    });
    return {
      llm: endpoint,
      retriever,
      messages: [
        { role: 'user', content: ['Question: what is the capital of France?', ...lines].join('\n') },
      ],
      role: 'solver',
      call: SEARCH_DEMO_CALL,
      seed: 11,
      temperature: 1,
      topP: 1,
      syntax: 'search_tags',
      finalTags: ['answer'],
      maxTurns: 10,
      maxTokens: 4096,
      topK: 3,
      passageTokens: 500,
      ...overrides,
    };
  }

  const PLAN = ['search: capital of France', 'garbage: ', 'search: Paris population', 'answer: Paris'];

  test('continues one assistant message turn after turn until the answer (search tags)', async () => {
    const t = await runSearchLoop(spec(PLAN));
    expect(t.stop).toBe('final');
    expect(t.searches).toEqual(['capital of France', 'Paris population']);
    expect(t.turns.map((turn) => turn.answeredWith)).toEqual(['results', 'error', 'results', undefined]);
    expect(t.turns.at(-1)?.text).toMatch(/<answer>Paris<\/answer>$/);
    // The scripted agent only moves on when it sees its own earlier turns: each continuation arrived.
    const stats = llm.stats();
    expect(stats.byCall[SEARCH_DEMO_CALL]?.requests).toBe(4);
    expect(stats.duplicates).toEqual({});
    expect(stats.badRequests).toBe(0);
    // Token counts come from the server's usage (one completion per request).
    expect(t.turns.every((turn) => typeof turn.tokens === 'number' && turn.tokens > 0)).toBe(true);
  });

  test("keeps each turn's sampled ids; the row takes the observations as inserted text, out of the loss", async () => {
    llm.configure({ tokenIds: 'vllm' });
    const t = await runSearchLoop(spec(PLAN));
    expect(t.turns.every((turn) => turn.sampled !== undefined)).toBe(true);
    const fields = trajectoryTokenFields(t);
    const segments = fields.completionTokens ?? [];
    // ids, observation, ids, observation, ids, observation, ids: one ids segment per turn, in order.
    expect(segments.map((s) => ('ids' in s ? 'ids' : 'text'))).toEqual([
      ...['ids', 'text', 'ids', 'text', 'ids', 'text'],
      'ids',
    ]);
    expect(segments.filter((s) => 'text' in s)).toEqual(
      t.turns.filter((turn) => turn.observation).map((turn) => ({ text: turn.observation })),
    );
    const sampled = t.turns.map((turn) => turn.sampled?.ids ?? []);
    expect(segments.filter((s) => 'ids' in s)).toEqual(sampled.map((ids) => ({ ids })));
    expect(fields.behaviourLogprobs).toEqual(sampled.flatMap((ids) => ids.map((id, i) => logprobOf(id, i))));
    // Each turn's ids are what the server sampled for that turn alone (its content, before the loop restored
    // the closing tag the stop sequence cut), not the text so far.
    t.turns.forEach((turn, i) => {
      expect(tokenIdsOf(turn.text).slice(0, sampled[i]?.length)).toEqual(sampled[i]);
      expect(sampled[i]?.length).toBeGreaterThan(0);
    });
  });

  test('a server without ids: the turns carry none, and the row falls back to its text', async () => {
    const t = await runSearchLoop(spec(PLAN));
    expect(t.turns.some((turn) => turn.sampled)).toBe(false);
    expect(trajectoryTokenFields(t)).toEqual({});
  });

  test('qwen3 tool calls, and correctness as the server is configured', async () => {
    llm.configure({ passRate: { min: 0, max: 0 } });
    const t = await runSearchLoop(spec(['syntax: qwen3_tool_call', ...PLAN], { syntax: 'qwen3_tool_call' }));
    expect(t.searches).toEqual(['capital of France', 'Paris population']);
    expect(t.turns[0]?.text).toContain(
      '<tool_call>{"name":"search","arguments":{"query":"capital of France"}}</tool_call>',
    );
    expect(t.turns.at(-1)?.text).toMatch(/<answer>not Paris<\/answer>$/);
  });

  test('rollouts differ in correctness by seed; the same seed gives the same trajectory', async () => {
    llm.configure({ passRate: { min: 0.5, max: 0.5 } });
    const rollouts = (): Promise<Trajectory[]> =>
      Promise.all(Array.from({ length: 12 }, (_, seed) => runSearchLoop(spec(PLAN, { seed }))));
    const first = await rollouts();
    const answers = first.map((t) => /<answer>(.*)<\/answer>$/.exec(t.completion)?.[1]);
    expect(new Set(answers)).toEqual(new Set(['Paris', 'not Paris']));
    // The agent's plan id is written once, on its first turn, and read back on the later ones.
    expect(first.every((t) => t.completion.match(/\[plan [0-9a-f]{8}\]/g)?.length === 1)).toBe(true);
    expect(await rollouts()).toEqual(first);
  });

  test('a retried trajectory resends only the turn that had not finished', async () => {
    const checkpoint = memoryCheckpoint();
    let searches = 0;
    const failing: Retriever = {
      name: 'failing',
      search: (query, options) => {
        if (++searches === 2) return Promise.reject(new Error('retriever went away'));
        return retriever.search(query, options);
      },
    };
    await expect(runSearchLoop(spec(PLAN, { checkpoint, retriever: failing }))).rejects.toThrow('went away');
    expect(checkpoint.saved.map((t) => t.turns.length)).toEqual([1, 2]);
    const t = await runSearchLoop(spec(PLAN, { checkpoint }));
    expect(t.stop).toBe('final');
    const stats = llm.stats();
    // Turns 0 and 1 were saved; turn 2 was sampled, its search failed, so it alone was sampled again.
    expect(stats.byCall[SEARCH_DEMO_CALL]?.requests).toBe(5);
    expect(Object.values(stats.duplicates)).toEqual([2]);
  });

  test('a trajectory that outgrows the context ends with the turns that fit; a question that does not fit is an InvalidInput', async () => {
    // Room for the question, not for the question and the first turn with its observation.
    const firstPrompt = approxTokens(spec(PLAN).messages[0]?.content ?? '');
    llm.configure({ contextTokens: firstPrompt + 1 });
    const t = await runSearchLoop(spec(PLAN));
    expect(t.stop).toBe('context_length');
    expect(t.searches).toEqual(['capital of France']);
    expect(t.turns).toHaveLength(1);
    // A retry (the same requests) ends the same way.
    expect(await runSearchLoop(spec(PLAN))).toEqual(t);

    llm.configure({ contextTokens: firstPrompt - 1 });
    const refused = await runSearchLoop(spec(PLAN)).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ContextLengthExceeded);
    expect(refused).toMatchObject({ type: 'InvalidInput', nonRetryable: true });
    expect((refused as Error).message).toMatch(/does not fit the model's context: .*maximum context length/);
  });

  test('the server refuses a continuation that also asks for a generation prompt, or continues no assistant', async () => {
    const post = (body: object) =>
      fetch(`${llm.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [CALL_HEADER]: SEARCH_DEMO_CALL },
        body: JSON.stringify({ model: 'scripted-policy', ...body }),
      });
    const assistant = [
      { role: 'user', content: 'search: x' },
      { role: 'assistant', content: '<think>' },
    ];
    const both = await post({ messages: assistant, continue_final_message: true });
    expect(both.status).toBe(400);
    expect(await both.text()).toContain('cannot both be true');
    const noAssistant = await post({
      messages: [{ role: 'user', content: 'search: x' }],
      continue_final_message: true,
      add_generation_prompt: false,
    });
    expect(noAssistant.status).toBe(400);
    const ok = await post({
      messages: assistant,
      continue_final_message: true,
      add_generation_prompt: false,
    });
    expect(ok.status).toBe(200);
  });
});
