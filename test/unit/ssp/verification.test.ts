import type { ChatRequest, LlmCaller } from '../../../activities/clients/inference';
import { seededRng } from '../../../activities/lib/rng';
import { ragVerifierMessages } from '../../../activities/recipes/ssp/prompts';
import {
  buildMaterials,
  joinInformation,
  verifyQuestion,
  type VerifyRequest,
} from '../../../activities/recipes/ssp/verification';
import { SSP_DEFAULTS } from '../../../config/presets/ssp';
import { scriptedCaller } from '../../support/recipe-harness';

const QUESTION = 'Which river town was founded by the cartographer who was born in Tessing in 1598?';

/** A verifier answering `rag`, and a judge answering `verdict`; both log their requests. */
function request(
  rag: string | Error,
  verdict: string | Error = 'Wrong',
): { req: VerifyRequest; calls: ChatRequest[] } {
  const calls: ChatRequest[] = [];
  const caller = (out: string | Error): LlmCaller => ({
    chat: (r) => {
      calls.push(r);
      return out instanceof Error
        ? Promise.reject(out)
        : Promise.resolve([{ content: out, finishReason: 'stop' }]);
    },
  });
  return {
    calls,
    req: {
      llm: caller(rag),
      call: 'ssp.rag_verifier',
      messages: ragVerifierMessages('materials', QUESTION),
      question: QUESTION,
      groundTruth: 'Velmora',
      seed: 1,
      sampling: SSP_DEFAULTS.verifier,
      judge: { llm: caller(verdict), call: 'ssp.verification_judge', seed: 2, sampling: SSP_DEFAULTS.judge },
    },
  };
}

describe('RAG verification materials (ssp.md §1.5)', () => {
  const own = ['Doc 1 (Title: "Velmora") Velmora is a town.', 'Doc 1 (Title: "Ilse Marrow") A cartographer.'];
  const others = ['noise A', 'noise B', 'noise C', 'noise D', 'noise E', 'noise F'];

  test('own joined block plus 4 whole noise blocks, shuffled, joined with blank lines', () => {
    const materials = buildMaterials(own, others, 4, seededRng(3, 1, 'rag-noise', 0));
    const parts = materials.split('\n\n');
    expect(parts).toHaveLength(5);
    expect(parts).toContain(joinInformation(own));
    expect(parts.filter((p) => others.includes(p))).toHaveLength(4);
    expect(new Set(parts).size).toBe(5);
  });

  test('deterministic per seed; another seed gives another draw or order', () => {
    const a = buildMaterials(own, others, 4, seededRng(3, 1, 'rag-noise', 0));
    expect(buildMaterials(own, others, 4, seededRng(3, 1, 'rag-noise', 0))).toBe(a);
    const variants = new Set(
      Array.from({ length: 20 }, (_, i) => buildMaterials(own, others, 4, seededRng(3, 1, 'rag-noise', i))),
    );
    expect(variants.size).toBeGreaterThan(1);
    // The own block is not always first: the shuffle moves it.
    const firsts = new Set(
      Array.from({ length: 20 }, (_, i) =>
        buildMaterials(own, others, 4, seededRng(9, i)).startsWith(joinInformation(own)),
      ),
    );
    expect(firsts).toEqual(new Set([true, false]));
  });

  test('fewer other trajectories than asked: all of them; 0 noise: only the own block', () => {
    expect(buildMaterials(own, ['n1', 'n2'], 4, seededRng(1)).split('\n\n').sort()).toEqual(
      [joinInformation(own), 'n1', 'n2'].sort(),
    );
    expect(buildMaterials(own, others, 0, seededRng(1))).toBe(joinInformation(own));
  });
});

describe('RAG verification verdicts fail closed (the code pitfalls, ssp.md §7)', () => {
  test('exact match passes without asking the judge', async () => {
    const { req, calls } = request('Short reasoning.\nAnswer: velmora.');
    expect(await verifyQuestion(req)).toMatchObject({ passed: true, exactMatch: true, answer: 'velmora.' });
    expect(calls.map((c) => c.call)).toEqual(['ssp.rag_verifier']);
  });

  test('a failing verifier request is a failure, never a pass (the code passed on exceptions)', async () => {
    const { req } = request(new Error('connect ECONNREFUSED'));
    const v = await verifyQuestion(req);
    expect(v).toMatchObject({ passed: false, failure: 'error', error: 'connect ECONNREFUSED' });
  });

  test('a failing judge request is a failure too', async () => {
    const { req } = request('Answer: the town of Velmora on the Ostrel', new Error('judge down'));
    expect(await verifyQuestion(req)).toMatchObject({ passed: false, failure: 'error' });
  });

  test('an output without "Answer:" is unparseable and fails; the judge is not asked', async () => {
    const { req, calls } = request('Velmora, I think.');
    expect(await verifyQuestion(req)).toMatchObject({ passed: false, failure: 'unparseable', answer: null });
    expect(calls).toHaveLength(1);
  });

  test.each([
    ['Incorrect', false, 'wrong_answer'],
    ['INCORRECT.', false, 'wrong_answer'],
    ['not correct', false, 'wrong_answer'],
    ['Wrong', false, 'wrong_answer'],
    ['Correct or Incorrect', false, 'unparseable'],
    ['', false, 'unparseable'],
    ['Correct', true, undefined],
  ])('the judge says %j → passed %j', async (verdict, passed, failure) => {
    const { req, calls } = request('Answer: the town of Velmora on the Ostrel', verdict);
    const v = await verifyQuestion(req);
    expect(v.passed).toBe(passed);
    expect(v.failure).toBe(failure);
    expect(v.judge?.completion).toBe(verdict);
    expect(calls.map((c) => c.call)).toEqual(['ssp.rag_verifier', 'ssp.verification_judge']);
  });

  test('a cancelled activity rethrows instead of recording a verdict', async () => {
    const controller = new AbortController();
    controller.abort();
    const { req } = request(new Error('aborted'));
    await expect(verifyQuestion({ ...req, signal: controller.signal })).rejects.toThrow('aborted');
  });

  test('the verifier is asked once, without tools, at the configured sampling, in role "verifier"', async () => {
    const { llm, calls } = scriptedCaller(() => 'Answer: Velmora');
    await verifyQuestion({ ...request('').req, llm });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ role: 'verifier', n: 1, temperature: 0.1, maxTokens: 70 });
    expect(JSON.stringify(calls[0]?.messages)).not.toContain('<search>');
  });
});
