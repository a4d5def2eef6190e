import { ApplicationFailure } from '@temporalio/common';
import { InferenceEndpoint, WeightsMoved, type EndpointSettings } from '../../activities/clients/inference';
import { SPICE_CALLS } from '../../activities/clients/llm-protocol';
import { metrics } from '../../activities/lib/metrics';
import { scriptedEndpoint } from '../support/scripted-llm/endpoint';
import { startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm/server';
import { logprobOf, tokenIdsOf } from '../support/scripted-llm/token-ids';

/** The real OpenAI-compatible client against the scripted server over HTTP. */
describe('InferenceEndpoint', () => {
  let llm: ScriptedLlm;
  beforeEach(async () => {
    llm = await startScriptedLlm({ capacity: 64 });
  });
  afterEach(() => llm.close());

  const endpoint = (overrides: Partial<EndpointSettings> = {}) =>
    new InferenceEndpoint({
      baseUrl: llm.url,
      model: 'scripted-policy',
      apiKey: 'EMPTY',
      maxConcurrentCompletions: 64,
      supportsN: true,
      requestTimeoutMs: 2_000,
      maxRetries: 4,
      ...overrides,
    });
  const request = (seed: number, n = 4, problem = seed) => ({
    role: 'reasoner',
    call: SPICE_CALLS.reason,
    messages: [{ role: 'user' as const, content: `Problem 0000abcd: compute 3 * ${problem} + 1.` }],
    n,
    seed,
    temperature: 1,
    topP: 1,
    maxTokens: 256,
  });

  test('retries 5xx, timeouts and malformed bodies until it gets the answer', async () => {
    llm.configure({ faults: { http500: 0.3, timeout: 0.15, malformedJson: 0.15 }, timeoutHoldMs: 60_000 });
    const ep = endpoint({ requestTimeoutMs: 500 });
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => ep.chat(request(i))));
    expect(answers.every((a) => a.length === 4 && a.every((s) => s.content.includes('\\boxed{')))).toBe(true);
    const { faults } = llm.stats();
    expect(faults.http500 + faults.timeout + faults.malformedJson).toBeGreaterThan(5);
  });

  test('keeps at most its limit of completions in flight, counting n', async () => {
    llm.configure({ latencyMs: 20 });
    const ep = endpoint({ maxConcurrentCompletions: 8 });
    await Promise.all(Array.from({ length: 20 }, (_, i) => ep.chat(request(i, 4))));
    expect(llm.stats().maxConcurrency).toBeLessThanOrEqual(8);
    expect(llm.stats().completions).toBe(80);
  });

  test("requests wait for completions ranked within their run: an older iteration's go to the server first", async () => {
    llm.configure({ latencyMs: 20 });
    const ep = endpoint({ maxConcurrentCompletions: 1 });
    const answered: string[] = [];
    const ask = (problem: number, iteration: number) =>
      ep
        .chat({ ...request(problem, 1), rank: { group: 'run', rank: iteration } })
        .then(() => answered.push(`${iteration}:${problem}`));
    // The first takes the one completion; the rest wait, the newer iteration's (8) queued first.
    await Promise.all([ask(1, 7), ask(2, 8), ask(3, 8), ask(4, 7), ask(5, 7)]);
    expect(answered).toEqual(['7:1', '7:4', '7:5', '8:2', '8:3']);
  });

  test('counts requests, completions and retries in the process metrics', async () => {
    metrics.reset();
    llm.configure({ faults: { http500: 0.5 } });
    await Promise.all(Array.from({ length: 10 }, (_, i) => endpoint().chat(request(i, 4))));
    const labels = { role: 'reasoner', call: SPICE_CALLS.reason };
    const count = (name: string) => metrics.counter(name, '').value(labels);
    expect(count('selfplay_inference_requests_total')).toBe(10);
    expect(count('selfplay_inference_completions_total')).toBe(40);
    expect(count('selfplay_inference_retries_total')).toBe(llm.stats().faults.http500);
    expect(count('selfplay_inference_completion_tokens_total')).toBeGreaterThan(40);
  });

  test("reports each request's wait for the worker's completions and the completions its requests hold", async () => {
    metrics.reset();
    llm.configure({ latencyMs: 20 });
    const ep = endpoint({ maxConcurrentCompletions: 8 });
    const held = () =>
      metrics
        .gauge('selfplay_inference_completions_in_flight', '')
        .value({ endpoint: llm.url, model: 'scripted-policy' });
    const pending = Promise.all(Array.from({ length: 5 }, (_, i) => ep.chat(request(i, 4))));
    // One turn of the event loop: the first two requests hold their 8 permits; no answer comes before 20 ms.
    await new Promise(setImmediate);
    expect(held()).toBe(8);
    await pending;
    expect(held()).toBe(0);
    const series = `{call="${SPICE_CALLS.reason}",role="reasoner"}`;
    const exposed = metrics.expose();
    expect(exposed).toContain(`selfplay_inference_permit_wait_seconds_count${series} 5`);
    // Two requests waited for a round of 20 ms and the last for two: about 80 ms in all (60: timers may fire early).
    const sum = Number(exposed.match(/^selfplay_inference_permit_wait_seconds_sum\S* (\S+)$/m)?.[1]);
    expect(sum).toBeGreaterThanOrEqual(0.06);
  });

  test('sends n single requests with consecutive seeds when the server does not take n', async () => {
    const ep = endpoint({ supportsN: false });
    const samples = await ep.chat(request(100, 3));
    expect(samples).toHaveLength(3);
    expect(llm.stats().requests).toBe(3);
    const single = await endpoint().chat(request(101, 1, 100));
    expect(single[0]?.content).toBe(samples[1]?.content);
  });

  test('an unknown model is a non-retryable error that says what to check', async () => {
    const err = await endpoint({ model: 'no-such-model' })
      .chat(request(1))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({ type: 'UnknownModel', nonRetryable: true });
    expect((err as Error).message).toContain('no-such-model');
    // Not retried: the server saw exactly one request.
    expect(llm.stats().requests + llm.stats().badRequests).toBe(1);
  });

  test('an unreachable server fails after the bounded retries, retryably', async () => {
    const url = llm.url;
    await llm.close();
    const err = await endpoint({ baseUrl: url, maxRetries: 1 })
      .chat(request(1))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(ApplicationFailure);
    expect((err as Error).message).toMatch(/gave up after 2 attempts/);
  });
});

/** Answers from weights other than the ones the shard synced never come back as samples. */
describe('InferenceEndpoint weight version', () => {
  let llm: ScriptedLlm;
  afterEach(() => llm.close());
  const endpoint = (model = 'scripted-policy') =>
    new InferenceEndpoint({
      baseUrl: llm.url,
      model,
      apiKey: 'EMPTY',
      maxConcurrentCompletions: 8,
      supportsN: true,
      requestTimeoutMs: 2_000,
      maxRetries: 4,
    });
  const request = (weights?: { version: number; run?: string }) => ({
    role: 'reasoner',
    call: SPICE_CALLS.reason,
    messages: [{ role: 'user' as const, content: 'Problem 0000abcd: compute 3 * 4 + 1.' }],
    n: 2,
    seed: 1,
    temperature: 1,
    topP: 1,
    maxTokens: 256,
    ...(weights === undefined ? {} : { weights }),
  });

  test('a server answering from another version fails the request at once, retryably, saying both', async () => {
    llm = await startScriptedLlm({ samplerPolicy: 'p', weightVersion: 7 });
    const err = await endpoint()
      .chat(request({ version: 1 }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WeightsMoved);
    expect(err).not.toBeInstanceOf(ApplicationFailure);
    expect((err as Error).message).toMatch(/weight version 7, but the shard synced it to weight version 1/);
    // Not retried against the same server: the shard's retry syncs it first.
    expect(llm.stats().requests).toBe(1);
  });

  test('the synced version, or a server that reports none, answers as before', async () => {
    llm = await startScriptedLlm({ samplerPolicy: 'p', weightVersion: 3 });
    expect(await endpoint().chat(request({ version: 3 }))).toHaveLength(2);
    expect(await endpoint().chat(request())).toHaveLength(2);
    await llm.close();
    llm = await startScriptedLlm({});
    expect(await endpoint().chat(request({ version: 3 }))).toHaveLength(2);
  });

  test("another run's weights at the synced version number are refused; the run's own lineage is its own", async () => {
    llm = await startScriptedLlm({ samplerPolicy: 'p', weightVersion: 3, weightLineage: 'parent' });
    const err = await endpoint()
      .chat(request({ version: 3, run: 'fork' }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WeightsMoved);
    expect((err as Error).message).toMatch(
      /run "parent"'s weight version 3, but the shard synced it to run "fork"'s/,
    );
    await llm.close();
    llm = await startScriptedLlm({ samplerPolicy: 'p', weightVersion: 3, weightLineage: 'fork.r2' });
    expect(await endpoint().chat(request({ version: 3, run: 'fork' }))).toHaveLength(2);
  });

  test('a synced model the server no longer knows (404) is a moved version, not a bad config', async () => {
    llm = await startScriptedLlm({});
    const err = await endpoint('policy-v4')
      .chat(request({ version: 4 }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WeightsMoved);
    expect((err as Error).message).toMatch(/no longer serves "policy-v4" \(404\).*version 4/);
  });
});

/** Token in, token out against the scripted server in each engine's shape, and without ids. */
describe('InferenceEndpoint sampled tokens', () => {
  let llm: ScriptedLlm;
  beforeEach(async () => {
    llm = await startScriptedLlm({ capacity: 8 });
  });
  afterEach(() => llm.close());

  const ask = (tokenIds: 'vllm' | 'sglang' | 'none') => {
    llm.configure({ tokenIds });
    return scriptedEndpoint(llm).chat({
      role: 'reasoner',
      call: SPICE_CALLS.reason,
      messages: [{ role: 'user', content: 'Problem 0000abcd: compute 3 * 5 + 1.' }],
      n: 3,
      seed: 11,
      temperature: 0.7,
      topP: 0.95,
      maxTokens: 256,
    });
  };

  test.each(['vllm', 'sglang'] as const)(
    '%s: every sample carries its ids, their log-probs and the temperature and top-p they were sampled at',
    async (mode) => {
      const samples = await ask(mode);
      expect(samples).toHaveLength(3);
      for (const s of samples) {
        const ids = tokenIdsOf(s.content);
        expect(s.sampled).toEqual({
          ids,
          logprobs: ids.map((id, i) => logprobOf(id, i)),
          temperature: 0.7,
          topP: 0.95,
        });
      }
    },
  );

  test('an engine without ids: no sampled tokens, the content as before', async () => {
    const samples = await ask('none');
    expect(samples.map((s) => s.sampled)).toEqual([undefined, undefined, undefined]);
    expect(samples.every((s) => s.content.includes('\\boxed{'))).toBe(true);
  });
});
