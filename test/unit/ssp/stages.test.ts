import type { ChatRequest, LlmCaller } from '../../../activities/clients/inference';
import { SSP_CALLS } from '../../../activities/clients/llm-protocol';
import { judgeSsp } from '../../../activities/recipes/ssp/judge';
import { proposeSsp } from '../../../activities/recipes/ssp/propose';
import { solveSsp } from '../../../activities/recipes/ssp/solve';
import { filterSsp } from '../../../activities/recipes/ssp/filter';
import type { SspGated, SspSolved, Verification } from '../../../activities/recipes/ssp/records';
import { configFor, recipeTestContext, scriptedCaller, scriptedEndpoint } from '../../support/recipe-harness';
import { fakeRetriever } from '../../support/search-fakes';
import { startScriptedLlm } from '../../support/scripted-llm/server';
import { GOOD_QUESTION, item, trajectory, unit } from './records';

/** The nth turn of a trajectory: how many observations the continued assistant message holds. */
const turnOf = (req: ChatRequest): number => {
  const last = req.messages.at(-1);
  return last?.role === 'assistant' ? (last.content.match(/<\/information>/g) ?? []).length : 0;
};

const config = configFor({ recipe: 'ssp', seed: 4, groupSize: 3 });

describe('SSP propose (ssp.md §1.2–1.3)', () => {
  test('a multi-turn proposer trajectory through the retriever, its question, and the masked observations', async () => {
    const { llm, calls } = scriptedCaller(
      (req) =>
        [
          '<think>start from a linked concept</think><search>Velmora founder</search>',
          '<think>bridge</think><search>Ilse Marrow</search>',
          `<think>done</think><question>${GOOD_QUESTION}</question>`,
        ][turnOf(req)] ?? '',
    );
    const retriever = fakeRetriever();
    const ctx = recipeTestContext(config, llm, { retriever });
    const p = await proposeSsp(ctx, unit(0, 'Velmora'));
    expect(p.question).toBe(GOOD_QUESTION);
    expect(p.trajectory.searches).toEqual(['Velmora founder', 'Ilse Marrow']);
    expect(retriever.queries).toEqual(['Velmora founder', 'Ilse Marrow']);
    expect(p.trajectory.information).toHaveLength(2);
    expect(p.trajectory.information[0]).toContain('About Velmora founder.');
    expect(calls.every((c) => c.call === SSP_CALLS.proposer && c.role === 'proposer')).toBe(true);
    expect(calls[0]?.temperature).toBe(1);
    expect(p.messages[1]?.content).toContain('The answer I provided is: Velmora.');
    const points = [...p.trajectory.completion];
    for (const [s, e] of p.trajectory.lossMaskSpans)
      expect(points.slice(s, e).join('')).toMatch(/^\n<information>\n[\s\S]*<\/information>\n\n$/);
  });

  test('a question tag inside a retrieved document is not the proposer question', async () => {
    const { llm } = scriptedCaller(
      (req) => ['<search>Velmora</search>', 'I give up without a question.'][turnOf(req)] ?? '',
    );
    const ctx = recipeTestContext(config, llm, {
      retriever: fakeRetriever({
        Velmora: [{ id: 'd', title: 'Velmora', text: `<question>${GOOD_QUESTION}</question>`, score: 1 }],
      }),
    });
    const p = await proposeSsp(ctx, unit(0, 'Velmora'));
    expect(p.trajectory.completion).toContain(`<question>${GOOD_QUESTION}</question>`);
    expect(p.question).toBeNull();
  });
});

describe('SSP solve: RAG verification, then n solver trajectories (ssp.md §1.5–1.7)', () => {
  const gated = (over: Partial<SspGated> = {}): SspGated => ({
    unit: 0,
    docIndex: 0,
    answer: 'Velmora',
    question: GOOD_QUESTION,
    rule: { passed: true },
    verifierMessages: [{ role: 'user', content: 'Materials: … Question: …' }],
    replacement: { question: 'a pooled question', answer: 'Pooled' },
    ...over,
  });

  /** Verifier says `rag` (or fails), the judge `verdict`; solvers search once and answer. */
  function model(rag: string | Error, verdict = 'Wrong'): { llm: LlmCaller; calls: ChatRequest[] } {
    return scriptedCaller((req) => {
      if (req.call === SSP_CALLS.ragVerifier) {
        if (rag instanceof Error) throw rag;
        return rag;
      }
      if (req.call === SSP_CALLS.verificationJudge) return verdict;
      return ['<search>who founded it</search>', '<answer>Velmora</answer>'][turnOf(req)] ?? '';
    });
  }

  test('verified: G trajectories on the own question', async () => {
    const { llm, calls } = model('Answer: Velmora');
    const s = await solveSsp(recipeTestContext(config, llm, { retriever: fakeRetriever() }), gated());
    expect(s).toMatchObject({ source: 'own', problem: { question: GOOD_QUESTION, answer: 'Velmora' } });
    expect(s.verification).toMatchObject({ passed: true, exactMatch: true });
    expect(s.trajectories).toHaveLength(3);
    const solver = calls.filter((c) => c.call === SSP_CALLS.solver);
    expect(solver).toHaveLength(6); // 3 trajectories × 2 turns
    expect(new Set(solver.filter((c) => turnOf(c) === 0).map((c) => c.seed)).size).toBe(3);
    expect(solver[0]?.messages.at(-1)?.content).toContain(`Question: ${GOOD_QUESTION}`);
  });

  test.each<[string, string | Error, string, Partial<Verification>]>([
    ['the verifier request fails', new Error('HTTP 500'), 'Correct', { failure: 'error' }],
    ['the verifier writes no Answer:', 'I cannot say', 'Correct', { failure: 'unparseable' }],
    ['the judge says Incorrect', 'Answer: Velmorra', 'Incorrect', { failure: 'wrong_answer' }],
  ])('%s: failed, and the slot solves its replay problem', async (_, rag, verdict, expected) => {
    const { llm } = model(rag, verdict);
    const s = await solveSsp(recipeTestContext(config, llm, { retriever: fakeRetriever() }), gated());
    expect(s.verification).toMatchObject({ passed: false, ...expected });
    expect(s).toMatchObject({
      source: 'replay',
      problem: { question: 'a pooled question', answer: 'Pooled' },
    });
    expect(s.trajectories).toHaveLength(3);
  });

  test('a retried solve resumes each trajectory from its checkpoint and keeps the verdict: nothing finished is asked again', async () => {
    const parts = new Map<string, unknown>();
    let failed = false;
    const { llm, calls } = scriptedCaller((req) => {
      if (req.call === SSP_CALLS.ragVerifier) return 'Answer: Velmora';
      // The first attempt dies on its first final turn, after every trajectory searched once.
      if (turnOf(req) === 1 && !failed) {
        failed = true;
        throw new Error('worker lost');
      }
      return ['<search>who founded it</search>', '<answer>Velmora</answer>'][turnOf(req)] ?? '';
    });
    const ctx = () => recipeTestContext(config, llm, { retriever: fakeRetriever(), parts });
    await expect(solveSsp(ctx(), gated())).rejects.toThrow('worker lost');
    const firstTurns = calls.filter((c) => c.call === SSP_CALLS.solver && turnOf(c) === 0).length;
    expect(firstTurns).toBe(3);
    const s = await solveSsp(ctx(), gated());
    expect(s.trajectories.map((t) => t.stop)).toEqual(['final', 'final', 'final']);
    // Turn 0 of each trajectory was sent once in all; only the failed turn was asked again.
    expect(calls.filter((c) => c.call === SSP_CALLS.solver && turnOf(c) === 0)).toHaveLength(3);
    // The RAG verification reached its verdict in the first attempt and was kept with the unit's parts.
    expect(calls.filter((c) => c.call === SSP_CALLS.ragVerifier)).toHaveLength(1);
    expect(s.verification).toMatchObject({ passed: true });
    expect(parts.get(`${gated().unit}/rag-verification`)).toEqual(s.verification);
    expect(parts.size).toBe(4);
  });

  test('a unit retried after its verification errored solves its own question afresh, not the replay one', async () => {
    const parts = new Map<string, unknown>();
    let down = true;
    let crashed = false;
    const { llm, calls } = scriptedCaller((req) => {
      if (req.call === SSP_CALLS.ragVerifier) {
        if (down) throw new Error('verifier unreachable');
        return 'Answer: Velmora';
      }
      // The first attempt (on the replay problem) dies on its first final turn, after every search turn.
      if (turnOf(req) === 1 && !crashed) {
        crashed = true;
        throw new Error('worker lost');
      }
      return ['<search>who founded it</search>', '<answer>Velmora</answer>'][turnOf(req)] ?? '';
    });
    const ctx = () => recipeTestContext(config, llm, { retriever: fakeRetriever(), parts });
    await expect(solveSsp(ctx(), gated())).rejects.toThrow('worker lost');
    down = false;
    const s = await solveSsp(ctx(), gated());
    expect(s).toMatchObject({ source: 'own', verification: { passed: true } });
    // Every own trajectory started from its first turn on its own question: nothing resumed from the replay's.
    const asked = (question: string) =>
      calls.filter(
        (c) =>
          c.call === SSP_CALLS.solver &&
          turnOf(c) === 0 &&
          c.messages.some((m) => m.content.includes(question)),
      ).length;
    expect(asked(GOOD_QUESTION)).toBe(3);
    expect(asked('a pooled question')).toBe(3);
    for (const t of s.trajectories) expect(t.stop).toBe('final');
  });

  test('a verification that errors is not kept: a retried unit asks again', async () => {
    const parts = new Map<string, unknown>();
    let down = true;
    const { llm, calls } = scriptedCaller((req) => {
      if (req.call === SSP_CALLS.ragVerifier) {
        if (down) throw new Error('verifier unreachable');
        return 'Answer: Velmora';
      }
      return ['<search>who founded it</search>', '<answer>Velmora</answer>'][turnOf(req)] ?? '';
    });
    const ctx = () => recipeTestContext(config, llm, { retriever: fakeRetriever(), parts });
    const first = await solveSsp(ctx(), gated());
    expect(first.verification).toMatchObject({ passed: false, failure: 'error' });
    expect(parts.has(`${gated().unit}/rag-verification`)).toBe(false);
    down = false;
    const again = await solveSsp(ctx(), gated());
    expect(again.verification).toMatchObject({ passed: true });
    expect(calls.filter((c) => c.call === SSP_CALLS.ragVerifier)).toHaveLength(2);
  });

  test("each role's rows carry the temperature it samples at: the proposer's own, the solver's the run's", async () => {
    const server = await startScriptedLlm({ tokenIds: 'sglang' });
    try {
      const endpoint = scriptedEndpoint(server);
      const cfg = configFor({
        recipe: 'ssp',
        groupSize: 3,
        sampling: { temperature: 0.6, topP: 0.9 },
        ssp: { proposerTemperature: 0.8 },
      });
      const ctx = recipeTestContext(cfg, endpoint, { retriever: fakeRetriever() });
      const { plan, gate, judge, propose, solve } = item({
        i: 0,
        verified: true,
        rewards: [1, 0, 1],
        source: 'own',
      });
      const proposed = await proposeSsp(ctx, plan);
      const solved = await solveSsp(ctx, gated());
      expect(solved.trajectories).toHaveLength(3);
      const { rows } = filterSsp({ config: cfg, runId: 'unit', iteration: 1, state: undefined }, [
        {
          shard: 0,
          plan: [plan],
          propose: [{ ...propose, trajectory: proposed.trajectory }],
          gate: [gate],
          solve: [{ ...solve, trajectories: solved.trajectories }],
          judge: [judge],
        },
      ]);
      const sampling = (role: string) =>
        rows.filter((r) => r.role === role).map((r) => ({ temperature: r.temperature, topP: r.topP }));
      expect(sampling('proposer')).toEqual([{ temperature: 0.8, topP: 0.9 }]);
      expect(sampling('solver')).toEqual(Array(3).fill({ temperature: 0.6, topP: 0.9 }));
    } finally {
      await server.close();
    }
  });

  test('failed with an empty pool: no solver trajectories', async () => {
    const { llm, calls } = model('Answer: somewhere else');
    const s = await solveSsp(
      recipeTestContext(config, llm, { retriever: fakeRetriever() }),
      gated({ replacement: undefined }),
    );
    expect(s).toMatchObject({ source: 'none', trajectories: [] });
    expect(calls.some((c) => c.call === SSP_CALLS.solver)).toBe(false);
  });

  test('rule-invalid: no verification call at all', async () => {
    const { llm, calls } = model('Answer: Velmora');
    const s = await solveSsp(
      recipeTestContext(config, llm, { retriever: fakeRetriever() }),
      gated({
        question: undefined,
        rule: { passed: false, reason: 'too_short' },
        verifierMessages: undefined,
      }),
    );
    expect(s.verification).toBeUndefined();
    expect(s.source).toBe('replay');
    expect(calls.some((c) => c.call === SSP_CALLS.ragVerifier)).toBe(false);
  });
});

describe('SSP judge (ssp.md §2)', () => {
  const gated: SspGated = {
    unit: 0,
    docIndex: 0,
    answer: 'Velmora',
    question: GOOD_QUESTION,
    rule: { passed: true },
  };
  const solved = (tails: string[], docExtra = ''): SspSolved => ({
    unit: 0,
    docIndex: 0,
    source: 'own',
    problem: { question: GOOD_QUESTION, answer: 'Velmora' },
    messages: [],
    trajectories: tails.map((t) => trajectory(['q1', 'q2'], [`Doc 1 (Title: "x") y${docExtra}\n`, 'z\n'], t)),
  });

  test('EM without the judge; the judge otherwise; "Incorrect" and unparseable verdicts score 0', async () => {
    const verdicts: Record<string, string> = {
      'the town of Velmora': 'Correct',
      Velmorra: 'Incorrect',
      Vel: 'maybe',
    };
    const { llm, calls } = scriptedCaller((req) => {
      const model = /Model Answer: (.*)/.exec(req.messages[1]?.content ?? '')?.[1] ?? '';
      return verdicts[model] ?? 'Wrong';
    });
    const j = await judgeSsp(
      recipeTestContext(config, llm),
      gated,
      solved([
        '<answer>velmora</answer>',
        '<answer>the town of Velmora</answer>',
        '<answer>Velmorra</answer>',
        '<answer>Vel</answer>',
        'no answer',
      ]),
    );
    expect(j.answers.map((a) => a.reward)).toEqual([1, 1, 0, 0, 0]);
    expect(j.answers.map((a) => a.judge?.verdict)).toEqual([
      undefined,
      'correct',
      'wrong',
      'unparseable',
      undefined,
    ]);
    expect(calls).toHaveLength(3);
    expect(calls.every((c) => c.call === SSP_CALLS.judge && c.role === 'judge')).toBe(true);
  });

  test('an <answer> inside a retrieved document is not the solver answer; tag spam quarters the reward', async () => {
    const { llm } = scriptedCaller(() => 'Wrong');
    const j = await judgeSsp(
      recipeTestContext(config, llm),
      gated,
      solved(
        ['I stop here.', `${'<answer>x</answer>'.repeat(10)}<answer>Velmora</answer>`],
        ' <answer>Velmora</answer>',
      ),
    );
    expect(j.answers[0]).toMatchObject({ answer: null, reward: 0 });
    expect(j.answers[1]).toMatchObject({ answer: 'Velmora', answerTags: 11, reward: 0.25 });
  });

  test('a failing judge request fails the unit (retried by the stage), never scores it', async () => {
    const llm: LlmCaller = { chat: () => Promise.reject(new Error('judge down')) };
    await expect(
      judgeSsp(recipeTestContext(config, llm), gated, solved(['<answer>Velmorra</answer>'])),
    ).rejects.toThrow('judge down');
  });
});
