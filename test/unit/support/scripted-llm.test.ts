import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { evaluate } from 'mathjs';
import OpenAI from 'openai';
import { CALL_HEADER, ROLE_HEADER, SPICE_CALLS } from '../../../activities/clients/llm-protocol';
import { kernelAdapter } from '../../../activities/clients/weight-sync/kernel';
import { fingerprintOf } from '../../support/scripted-llm/chat-request';
import { passRateOf } from '../../support/scripted-llm/problems';
import {
  startScriptedLlm,
  type ScriptedLlm,
  type ScriptedLlmOptions,
} from '../../support/scripted-llm/server';
import { Slots } from '../../support/scripted-llm/slots';
import {
  DEFAULT_CONFIG,
  applyPatch,
  completionLatency,
  configPatchSchema,
} from '../../support/scripted-llm/config';

const MODEL = 'scripted-policy';
const DOCUMENT =
  'A bakery sells 48 loaves on weekdays and 75 on weekends. Each loaf needs 12 grams of yeast. ' +
  'The owner orders flour in sacks of 25 kilograms. Croissants require butter and patience.';

const mcqPrompt = (doc: string): string =>
  `Write a hard multiple-choice question.\n[BEGINNING OF THE DOCUMENT] ${doc} [END OF THE DOCUMENT]`;
const freeFormPrompt = (doc: string, type: string): string =>
  `${mcqPrompt(doc)}\nYou must generate a question with answer type: ${type}`;
const reasonerPrompt = (question: string): string =>
  `${question}\n\nPlease reason step by step, and put your final answer within \\boxed{}.`;

interface Body {
  model?: string;
  messages?: Array<{ role: string; content: string }>;
  n?: number;
  seed?: number;
  temperature?: number;
  [field: string]: unknown;
}

interface Reply {
  status: number;
  text: string;
  json(): {
    choices: Array<{ message: { content: string }; finish_reason: string }>;
    error?: { message: string };
  };
}

async function post(
  llm: ScriptedLlm,
  call: string | undefined,
  body: Body,
  signal?: AbortSignal,
): Promise<Reply> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (call !== undefined) headers[CALL_HEADER] = call;
  const res = await fetch(`${llm.url}/chat/completions`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) as ReturnType<Reply['json']> };
}

const ask = (content: string, extra: Partial<Body> = {}): Body => ({
  model: MODEL,
  messages: [{ role: 'user', content }],
  seed: 1,
  temperature: 1,
  ...extra,
});

async function contents(llm: ScriptedLlm, call: string, body: Body): Promise<string[]> {
  const reply = await post(llm, call, body);
  expect(reply.status).toBe(200);
  return reply.json().choices.map((c) => c.message.content);
}

/** The JSON object after the thinking, as a tolerant parser finds it, or undefined when there is none. */
function taskJson(content: string): Record<string, unknown> | undefined {
  const start = content.indexOf('{');
  if (start < 0) return undefined;
  try {
    return JSON.parse(content.slice(start)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

const boxed = (content: string): string | undefined => /\\boxed\{([^{}]*)\}[^]*$/.exec(content)?.[1];
const REFERS_TO_SOURCE = /\b(the|this) (text|document|passage)\b/i;

/** The spec's validity rules (SPICE §2.1, §4.2, §4.3, §7), written independently of the server. */
function isValidTask(content: string, mcq: boolean): boolean {
  const task = taskJson(content);
  if (!task) return false;
  const question = mcq ? task.multiple_choice_question : task.question;
  if (typeof question !== 'string' || question.trim() === '' || REFERS_TO_SOURCE.test(question)) return false;
  if (mcq) {
    const letter = task.multiple_choice_correct;
    return typeof letter === 'string' && /^[A-D]$/.test(letter) && question.includes(`Correct: ${letter}`);
  }
  const answer = task.answer;
  return (typeof answer === 'string' && answer.trim() !== '') || typeof answer === 'number';
}

let llm: ScriptedLlm;
const start = async (options: ScriptedLlmOptions = {}): Promise<void> => {
  llm = await startScriptedLlm(options);
};
afterEach(async () => {
  await llm.close();
});

/** Writes a valid free-form task of the given type and returns its question and gold answer. */
async function freeFormTask(
  doc: string,
  type: string,
  seed: number,
): Promise<{ question: string; answer: string }> {
  const [content = ''] = await contents(llm, SPICE_CALLS.freeForm, ask(freeFormPrompt(doc, type), { seed }));
  const task = taskJson(content);
  return { question: String(task?.question), answer: String(task?.answer) };
}

describe('scripted LLM: OpenAI compatibility', () => {
  test('the openai client lists the model and gets a chat completion with usage', async () => {
    await start({ invalidTaskRate: 0 });
    const client = new OpenAI({ baseURL: llm.url, apiKey: 'EMPTY', maxRetries: 0 });
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual([MODEL]);
    const completion = await client.chat.completions.create(
      {
        model: MODEL,
        messages: [{ role: 'user', content: mcqPrompt(DOCUMENT) }],
        n: 3,
        seed: 7,
        max_tokens: 4096,
      },
      { headers: { [ROLE_HEADER]: 'challenger', [CALL_HEADER]: SPICE_CALLS.mcq } },
    );
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(
      completion.choices.every((c) => c.finish_reason === 'stop' && c.message.role === 'assistant'),
    ).toBe(true);
    expect(completion.usage?.total_tokens).toBe(
      (completion.usage?.prompt_tokens ?? 0) + (completion.usage?.completion_tokens ?? 0),
    );
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);
  });

  test('max_tokens cuts the content with finish_reason length, and stop strings end it early', async () => {
    await start({ invalidTaskRate: 0 });
    const long = (await post(llm, SPICE_CALLS.mcq, ask(mcqPrompt(DOCUMENT), { max_tokens: 5 }))).json();
    expect(long.choices[0]?.finish_reason).toBe('length');
    expect(long.choices[0]?.message.content).toHaveLength(20);
    const stopped = (await post(llm, SPICE_CALLS.mcq, ask(mcqPrompt(DOCUMENT), { stop: ['{'] }))).json();
    expect(stopped.choices[0]?.finish_reason).toBe('stop');
    expect(stopped.choices[0]?.message.content).not.toContain('{');
    expect(stopped.choices[0]?.message.content.length).toBeGreaterThan(0);
  });

  test('bad requests get OpenAI-style 400/404 errors that name the problem', async () => {
    await start();
    const cases: Array<[string | undefined, Body | string, number, RegExp]> = [
      [SPICE_CALLS.reason, { model: MODEL }, 400, /messages/],
      [SPICE_CALLS.reason, ask('hi', { n: 0 }), 400, /^n: /],
      [SPICE_CALLS.reason, ask('hi', { max_tokens: 'lots' }), 400, /max_tokens/],
      [SPICE_CALLS.reason, ask('hi', { stream: true }), 400, /stream/],
      [SPICE_CALLS.reason, ask('hi', { model: 'gpt-9' }), 404, /gpt-9/],
      ['spice.oracle', ask('hi'), 400, /unknown call "spice\.oracle"/],
      [undefined, ask('hi'), 400, /missing header x-selfplay-call/],
    ];
    for (const [call, body, status, message] of cases) {
      const reply = await post(llm, call, body as Body);
      expect({ status: reply.status, body }).toEqual({ status, body });
      const error = (JSON.parse(reply.text) as { error: { message: string; type: string; code: string } })
        .error;
      expect(error.message).toMatch(message);
      expect(error.type).toBe('invalid_request_error');
    }
    const notJson = await fetch(`${llm.url}/chat/completions`, {
      method: 'POST',
      headers: { [CALL_HEADER]: SPICE_CALLS.reason },
      body: '{"model":',
    });
    expect(notJson.status).toBe(400);
    expect(llm.stats()).toMatchObject({ badRequests: cases.length + 1, requests: 0 });
  });

  test("a prompt over the context gets vLLM's 400; a call kind's own contextTokens refuses only that call", async () => {
    await start({ contextTokens: 1_000, calls: { [SPICE_CALLS.mcq]: { contextTokens: 50 } } });
    const prompt = 'word '.repeat(80); // 100 tokens as the server counts them
    const refused = await post(llm, SPICE_CALLS.mcq, ask(prompt));
    expect(refused.status).toBe(400);
    expect(refused.json().error?.message).toMatch(/^This model's maximum context length is 50 tokens/);
    expect((await post(llm, SPICE_CALLS.reason, ask(prompt))).status).toBe(200);
    expect((await post(llm, SPICE_CALLS.reason, ask(prompt.repeat(11)))).status).toBe(400);
  });
});

describe('scripted LLM: behaviours', () => {
  test('the same request gets the same answer; another seed or choice index gets another', async () => {
    await start({ invalidTaskRate: 0 });
    const body = ask(mcqPrompt(DOCUMENT), { n: 4, seed: 11 });
    const first = await contents(llm, SPICE_CALLS.mcq, body);
    expect(await contents(llm, SPICE_CALLS.mcq, body)).toEqual(first);
    expect(new Set(first).size).toBe(4);
    const reseeded = await contents(llm, SPICE_CALLS.mcq, { ...body, seed: 12 });
    expect(reseeded.filter((c) => first.includes(c))).toEqual([]);
    const greedy = await contents(llm, SPICE_CALLS.mcq, { ...body, temperature: 0 });
    expect(new Set(greedy).size).toBe(1);
  });

  test('type selection returns only the JSON, one boolean true, MCQ at about the configured fraction', async () => {
    await start({ mcqFraction: 0.3 });
    const picks = await contents(llm, SPICE_CALLS.typeSelection, ask(`Document:\n${DOCUMENT}`, { n: 100 }));
    const parsed = picks.map((p) => JSON.parse(p) as Record<string, unknown>);
    for (const choice of parsed) {
      expect(Object.keys(choice).sort()).toEqual([
        'best_answer_type',
        'reason',
        'suitable_for_free_form',
        'suitable_for_mcq',
      ]);
      expect(choice.suitable_for_mcq !== choice.suitable_for_free_form).toBe(true);
      expect(choice.best_answer_type).toEqual(
        choice.suitable_for_mcq ? null : expect.stringMatching(/^(Integer|Expression|String)$/),
      );
      expect(String(choice.reason).length).toBeLessThan(100);
    }
    const mcq = parsed.filter((c) => c.suitable_for_mcq).length;
    expect(mcq).toBeGreaterThanOrEqual(18);
    expect(mcq).toBeLessThanOrEqual(42);
    const freeForm = parsed.filter((c) => !c.suitable_for_mcq);
    expect(freeForm.filter((c) => c.best_answer_type === 'Integer').length).toBeGreaterThan(
      freeForm.length / 2,
    );
  });

  test('MCQ tasks are self-contained, grounded in quotes, with four distinct options and a right key', async () => {
    await start({ invalidTaskRate: 0 });
    const outputs = await contents(llm, SPICE_CALLS.mcq, ask(mcqPrompt(DOCUMENT), { n: 20 }));
    for (const content of outputs) {
      expect(content.indexOf('{')).toBeGreaterThan(0); // thinking first, then raw JSON
      expect(isValidTask(content, true)).toBe(true);
      const task = taskJson(content) as Record<string, string | string[]>;
      const question = String(task.multiple_choice_question);
      const lines = question.split('\n');
      expect(lines).toHaveLength(6);
      const options = lines.slice(1, 5).map((line, i) => {
        expect(line.startsWith(`${'ABCD'[i]}) `)).toBe(true);
        return line.slice(3);
      });
      expect(new Set(options).size).toBe(4);
      const expression = /compute (.+)\.$/.exec(lines[0] ?? '')?.[1] ?? '';
      const value = String(evaluate(expression));
      expect(task.correct_answer).toBe(value);
      expect(options['ABCD'.indexOf(String(task.multiple_choice_correct))]).toBe(value);
      for (const quote of task.answer_quote ?? []) expect(DOCUMENT).toContain(quote);
      for (const field of ['identified_answer', 'hardening_process', 'exam_question', 'self_test_solution']) {
        expect(String(task[field]).length).toBeGreaterThan(0);
      }
    }
  });

  test('free-form tasks have the requested answer type and a gold answer that is right', async () => {
    await start({ invalidTaskRate: 0 });
    for (const type of ['Integer', 'Expression', 'String']) {
      const outputs = await contents(
        llm,
        SPICE_CALLS.freeForm,
        ask(freeFormPrompt(DOCUMENT, type), { n: 10 }),
      );
      for (const content of outputs) {
        expect(isValidTask(content, false)).toBe(true);
        const task = taskJson(content) as Record<string, unknown>;
        expect(task.answer_type).toBe(type);
        const question = String(task.question);
        expect(question).not.toMatch(REFERS_TO_SOURCE);
        for (const quote of task.relevant_quotes as string[]) expect(DOCUMENT).toContain(quote);
        if (type === 'Integer') {
          expect(typeof task.answer).toBe('number');
          expect(task.answer).toBe(evaluate(/compute (.+)\.$/.exec(question)?.[1] ?? ''));
        } else if (type === 'Expression') {
          const product = /expand (.+) into a polynomial in x\.$/.exec(question)?.[1] ?? '';
          for (const x of [-2, 0, 1, 3])
            expect(
              Math.abs(Number(evaluate(String(task.answer), { x })) - Number(evaluate(product, { x }))),
            ).toBe(0);
        } else {
          const word = /write the word "([a-z]+)" backwards\.$/.exec(question)?.[1] ?? '';
          expect(DOCUMENT.toLowerCase()).toContain(word);
          expect(task.answer).toBe([...word].reverse().join(''));
        }
      }
    }
  });

  test('invalid tasks come at the configured rate, and each breaks a validity rule', async () => {
    await start({ invalidTaskRate: 1 });
    const mcq = await contents(llm, SPICE_CALLS.mcq, ask(mcqPrompt(DOCUMENT), { n: 40 }));
    const free = await contents(
      llm,
      SPICE_CALLS.freeForm,
      ask(freeFormPrompt(DOCUMENT, 'Integer'), { n: 40 }),
    );
    expect(mcq.filter((c) => isValidTask(c, true))).toEqual([]);
    expect(free.filter((c) => isValidTask(c, false))).toEqual([]);
    // All four ways of going wrong occur.
    expect(free.some((c) => taskJson(c) === undefined)).toBe(true);
    expect(free.some((c) => Array.isArray(taskJson(c)?.answer))).toBe(true);
    expect(free.some((c) => taskJson(c)?.answer === '')).toBe(true);
    expect(free.some((c) => REFERS_TO_SOURCE.test(String(taskJson(c)?.question)))).toBe(true);
    expect(mcq.some((c) => taskJson(c)?.multiple_choice_correct === '')).toBe(true);

    llm.configure({ invalidTaskRate: 0.2 });
    const mixed = await contents(
      llm,
      SPICE_CALLS.freeForm,
      ask(freeFormPrompt(DOCUMENT, 'String'), { n: 120, seed: 3 }),
    );
    const invalid = mixed.filter((c) => !isValidTask(c, false)).length;
    expect(invalid).toBeGreaterThanOrEqual(12);
    expect(invalid).toBeLessThanOrEqual(36);
  });

  test("the reasoner is right at about each task's pass rate, the same after a restart", async () => {
    await start({ invalidTaskRate: 0, passRate: { min: 0.1, max: 0.9 } });
    let checked = 0;
    for (let seed = 0; seed < 8; seed++) {
      const type = ['Integer', 'Expression', 'String'][seed % 3] ?? 'Integer';
      const { question, answer } = await freeFormTask(DOCUMENT, type, seed);
      const answers = await contents(
        llm,
        SPICE_CALLS.reason,
        ask(reasonerPrompt(question), { n: 100, seed: 99 }),
      );
      const rate = answers.filter((a) => boxed(a) === answer).length / answers.length;
      expect(answers.every((a) => boxed(a) !== undefined)).toBe(true);
      const p = passRateOf(/Problem [0-9a-f]{8}: .*/.exec(question)?.[0] ?? '', { min: 0.1, max: 0.9 });
      expect(Math.abs(rate - p)).toBeLessThan(0.15);
      checked++;
      if (seed === 0) {
        await llm.close();
        await start({ invalidTaskRate: 0, passRate: { min: 0.1, max: 0.9 } });
        expect(
          await contents(llm, SPICE_CALLS.reason, ask(reasonerPrompt(question), { n: 100, seed: 99 })),
        ).toEqual(answers);
      }
    }
    expect(checked).toBe(8);
  });

  test('the reasoner is never right at p=0, always at p=1, and answers MCQ with the letter', async () => {
    await start({ invalidTaskRate: 0, passRate: { min: 0, max: 0 } });
    const [content = ''] = await contents(llm, SPICE_CALLS.mcq, ask(mcqPrompt(DOCUMENT)));
    const task = taskJson(content) as Record<string, string>;
    const question = String(task.multiple_choice_question).replace(/\nCorrect: [A-D]$/, '');
    const prompt = ask(reasonerPrompt(question), { n: 50 });
    const never = (await contents(llm, SPICE_CALLS.reason, prompt)).map(boxed);
    expect(
      never.every((letter) => /^[A-D]$/.test(letter ?? '') && letter !== task.multiple_choice_correct),
    ).toBe(true);
    llm.configure({ passRate: { min: 1, max: 1 } });
    const always = (await contents(llm, SPICE_CALLS.reason, prompt)).map(boxed);
    expect(always).toEqual(Array(50).fill(task.multiple_choice_correct));
  });

  test('a question the server did not write gets a wrong boxed answer', async () => {
    await start({ passRate: { min: 1, max: 1 } });
    const [answer = ''] = await contents(llm, SPICE_CALLS.reason, ask(reasonerPrompt('What is 2 + 2?')));
    expect(boxed(answer)).toBe('no answer');
  });
});

describe('scripted LLM: engine', () => {
  test('never runs more completions than its capacity, and a request larger than it still finishes', async () => {
    await start({ capacity: 3, latencyMs: 10, invalidTaskRate: 0 });
    const burst = Array.from({ length: 8 }, (_, i) =>
      contents(llm, SPICE_CALLS.reason, ask(reasonerPrompt(`question ${i}`), { n: 2 })),
    );
    burst.push(contents(llm, SPICE_CALLS.reason, ask(reasonerPrompt('big'), { n: 5 })));
    const answers = await Promise.all(burst);
    expect(answers.map((a) => a.length)).toEqual([2, 2, 2, 2, 2, 2, 2, 2, 5]);
    const stats = llm.stats();
    expect(stats.maxConcurrency).toBe(3);
    expect(stats).toMatchObject({ completions: 21, requests: 9, inFlight: 0, queued: 0 });
  });

  test('slots are granted in arrival order, and an aborted waiter leaves the queue', async () => {
    const slots = new Slots(1);
    const alive = new AbortController().signal;
    const order: string[] = [];
    const first = await slots.acquire(alive);
    const gone = new AbortController();
    const waiters = ['b', 'c', 'd'].map((name) =>
      slots.acquire(name === 'c' ? gone.signal : alive).then((release) => {
        order.push(name);
        release();
      }),
    );
    expect(slots.waiting).toBe(3);
    gone.abort(new Error('client went away'));
    await expect(waiters[1]).rejects.toThrow('client went away');
    expect(slots.waiting).toBe(2);
    first();
    await Promise.all([waiters[0], waiters[2]]);
    expect(order).toEqual(['b', 'd']);
    expect({ inUse: slots.inUse, peak: slots.maxInUse }).toEqual({ inUse: 0, peak: 1 });
  });

  test('slot-seconds sum every completion holding a slot, not only whether one ran', async () => {
    await start({ capacity: 4, latencyMs: 200, invalidTaskRate: 0 });
    const from = Date.now();
    await contents(llm, SPICE_CALLS.reason, ask(reasonerPrompt('four at once'), { n: 4 }));
    const to = Date.now();
    const busy = llm.busySecondsWithin(from, to);
    // Four completions of 0.2 s side by side: 0.8 slot-seconds (less a timer's millisecond each) in 0.2 s.
    expect(llm.slotSecondsWithin(from, to)).toBeGreaterThan(3.5 * busy);
    expect(llm.slotSecondsWithin(from, to)).toBeGreaterThanOrEqual(0.78);
  });

  test('a recorded length histogram sets each completion latency relative to its median', () => {
    const config = applyPatch(DEFAULT_CONFIG, {
      latencyMs: 100,
      lengths: [
        { tokens: 2000, count: 1 },
        { tokens: 200, count: 3 },
      ],
    });
    // Three in four completions are 200 tokens (the median): 100 ms; the top quarter 10× longer.
    expect(completionLatency(config, 'reason', 0.5, 1)).toBe(100);
    expect(completionLatency(config, 'reason', 0.9, 1)).toBe(1000);
    expect(() =>
      applyPatch(DEFAULT_CONFIG, configPatchSchema.parse({ lengths: [{ tokens: 5, count: 0 }] })),
    ).toThrow('at least one bin must have a positive count');
  });
});

describe('scripted LLM: faults and fingerprints', () => {
  const reasonBody = ask(reasonerPrompt('Problem 0000abcd: compute 2 + 3 * 4.'), { n: 2 });

  test('an HTTP 500 hits a body once; the retry of that body succeeds; other calls are spared', async () => {
    await start({ calls: { [SPICE_CALLS.reason]: { faults: { http500: 1 } } } });
    const failed = await post(llm, SPICE_CALLS.reason, reasonBody);
    expect(failed.status).toBe(500);
    expect(failed.json().error?.message).toMatch(/scripted fault/);
    expect((await post(llm, SPICE_CALLS.reason, reasonBody)).status).toBe(200);
    expect((await post(llm, SPICE_CALLS.typeSelection, ask('Document:\nx'))).status).toBe(200);
    expect(llm.stats().faults.http500).toBe(1);
  });

  test('malformed JSON, a missing \\boxed{} and garbage challenger content each happen once per body', async () => {
    await start({ faults: { malformedJson: 1 } });
    const malformed = await post(llm, SPICE_CALLS.reason, reasonBody);
    expect(malformed.status).toBe(200);
    expect(() => malformed.json()).toThrow(SyntaxError);
    expect((await post(llm, SPICE_CALLS.reason, reasonBody)).json().choices).toHaveLength(2);

    llm.configure({ faults: { malformedJson: 0, missingBoxed: 1, garbageContent: 1 } });
    const other = ask(reasonerPrompt('Problem 0000abce: compute 5 - 3 * 4.'));
    const [unboxed = ''] = await contents(llm, SPICE_CALLS.reason, other);
    expect(boxed(unboxed)).toBeUndefined();
    expect(unboxed).toMatch(/The final answer is -?\d+\./);
    expect(boxed((await contents(llm, SPICE_CALLS.reason, other))[0] ?? '')).toBeDefined();

    const [garbage = ''] = await contents(llm, SPICE_CALLS.mcq, ask(mcqPrompt(DOCUMENT)));
    expect(garbage).not.toContain('{');
    expect(taskJson((await contents(llm, SPICE_CALLS.mcq, ask(mcqPrompt(DOCUMENT))))[0] ?? '')).toBeDefined();
    expect(llm.stats().faults).toMatchObject({ malformedJson: 1, missingBoxed: 1, garbageContent: 1 });
  });

  test('a timeout holds the response until the client gives up; the retry is answered', async () => {
    await start({ faults: { timeout: 1 }, timeoutHoldMs: 120_000 });
    await expect(post(llm, SPICE_CALLS.reason, reasonBody, AbortSignal.timeout(300))).rejects.toThrow();
    expect((await post(llm, SPICE_CALLS.reason, reasonBody)).status).toBe(200);
    expect(llm.stats().faults.timeout).toBe(1);
  });

  test('close() does not wait for a held response', async () => {
    await start({ faults: { timeout: 1 }, timeoutHoldMs: 120_000 });
    const held = post(llm, SPICE_CALLS.reason, reasonBody);
    while (llm.stats().faults.timeout === 0) await new Promise((resolve) => setImmediate(resolve));
    const closing = llm.close();
    await expect(held).rejects.toThrow();
    await closing;
  }, 10_000);

  test('which bodies get a fault is a function of the body: the same set after a reset', async () => {
    await start({ faults: { http500: 0.5 } });
    const statuses = async (): Promise<number[]> =>
      Promise.all(
        Array.from(
          { length: 40 },
          async (_, i) => (await post(llm, SPICE_CALLS.reason, ask(`q${i}`))).status,
        ),
      );
    const first = await statuses();
    const failed = first.filter((s) => s === 500).length;
    expect(failed).toBeGreaterThan(8);
    expect(failed).toBeLessThan(32);
    expect((await statuses()).every((s) => s === 200)).toBe(true);
    llm.reset();
    expect(await statuses()).toEqual(first);
  });

  test('failNext over the admin API fails the next requests whatever their body', async () => {
    await start();
    const admin = (path: string, body?: unknown): Promise<Response> =>
      fetch(`http://127.0.0.1:${llm.port}/admin/${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    expect((await admin('configure', { failNext: { count: 2, kind: 'http500' } })).status).toBe(200);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await post(llm, SPICE_CALLS.reason, reasonBody)).status);
    expect(statuses).toEqual([500, 500, 200]);
    const stats = (await (await admin('stats')).json()) as { faults: { http500: number }; requests: number };
    expect(stats).toMatchObject({ faults: { http500: 2 }, requests: 3 });
    const refused = await admin('configure', { passRate: { min: 2 } });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/passRate\.min/);
    expect((await admin('reset', {})).status).toBe(200);
    expect(llm.stats().requests).toBe(0);
  });

  test('fingerprints count repeated requests so a test can prove none was repeated', async () => {
    await start();
    await post(llm, SPICE_CALLS.reason, reasonBody);
    await post(llm, SPICE_CALLS.reason, { ...reasonBody, seed: 2 });
    expect(llm.stats().duplicates).toEqual({});
    await post(llm, SPICE_CALLS.reason, reasonBody);
    const fingerprint = fingerprintOf(SPICE_CALLS.reason, reasonBody.messages ?? [], reasonBody.seed, 2);
    const stats = llm.stats();
    expect(stats.duplicates).toEqual({ [fingerprint]: 2 });
    expect(Object.values(stats.fingerprintCounts).sort()).toEqual([1, 2]);
    expect(stats.byCall[SPICE_CALLS.reason]).toEqual({ requests: 3, completions: 6 });
    llm.reset();
    expect(llm.stats().fingerprintCounts).toEqual({});
  });
});

describe('scripted LLM: weight sync as the kernel sampler', () => {
  test('the kernel adapter loads a version into it and reads it back; without the option there is no route', async () => {
    await start({ samplerPolicy: 'p' });
    const replica = llm;
    const plain = await startScriptedLlm();
    try {
      const adapter = kernelAdapter();
      const target = {
        snapshot: { policy: 'p', version: 3, uri: 's3://b/snap/v3', format: 'full' as const },
      };
      expect(await adapter.servedVersion(replica.url, target)).toBeUndefined();
      await adapter.load(replica.url, target);
      expect(await adapter.servedVersion(replica.url, target)).toBe(3);
      expect(replica.stats()).toMatchObject({ weightVersion: 3, samplerLoads: 1 });
      const models = (await (await fetch(`${replica.url}/models`)).json()) as { data: Array<{ id: string }> };
      expect(models.data.map((m) => m.id)).toEqual([MODEL, 'p']);
      await expect(
        adapter.load(plain.url, { snapshot: { policy: 'p', version: 1, uri: 's3://b/v1', format: 'full' } }),
      ).rejects.toThrow(/404/);
      const bad = await fetch(`${replica.url.replace(/\/v1$/, '')}/v1/sampler/load`, {
        method: 'POST',
        body: JSON.stringify({ uri: 's3://b/v', version: -1 }),
      });
      expect(bad.status).toBe(400);
    } finally {
      await plain.close();
    }
  });
});

describe('scripted LLM: CLI', () => {
  test('starts as a process, prints its URL as one JSON line, and exits on SIGTERM', async () => {
    const root = path.resolve(__dirname, '../../..');
    const child = spawn(
      process.execPath,
      [
        path.join(root, 'node_modules/tsx/dist/cli.mjs'),
        path.join(root, 'test/support/scripted-llm/main.ts'),
        '--port',
        '0',
        '--capacity',
        '2',
        '--config',
        JSON.stringify({ models: ['cli-model'] }),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
    const announced = JSON.parse(line) as { url: string; port: number };
    expect(announced.url).toBe(`http://127.0.0.1:${announced.port}/v1`);
    const models = (await (await fetch(`${announced.url}/models`)).json()) as { data: Array<{ id: string }> };
    expect(models.data.map((m) => m.id)).toEqual(['cli-model']);
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    expect(await exited).toEqual([0, null]);
  }, 60_000);
});
