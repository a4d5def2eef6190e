import { InferenceEndpoint } from '../../activities/clients/inference';
import { SSP_CALLS } from '../../activities/clients/llm-protocol';
import { judgeCorrectness } from '../../activities/recipes/ssp/correctness';
import { ragVerifierMessages } from '../../activities/recipes/ssp/prompts';
import { verifyQuestion } from '../../activities/recipes/ssp/verification';
import { SSP_DEFAULTS } from '../../config/presets/ssp';
import { SEARCH_WORLD_GRADER_MODEL } from '../../infra/toy-world/search-world-folder';
import { chains, documentsOf, taskOf, type Chain } from '../../infra/toy-world/ssp-world';
import { startSspGrader } from '../support/grader-servers';
import type { ScriptedLlm } from '../support/scripted-llm/server';

/**
 * SSP's toy world's grader (infra/toy-world/ssp-grader.ts), reached through the recipe's own calls over HTTP
 * (the scripted server serving its calls, as a run does):
 * the judge's verdict and RAG verification are what the recipe parses of the grader's replies.
 */
describe("SSP's toy-world grader", () => {
  const world = { seed: 0, chains: 64 };
  const [chain, other] = chains(world.seed, world.chains) as [Chain, Chain];
  let grader: ScriptedLlm;
  let llm: InferenceEndpoint;

  beforeAll(async () => {
    grader = await startSspGrader(world);
    llm = new InferenceEndpoint({
      baseUrl: grader.url,
      model: SEARCH_WORLD_GRADER_MODEL,
      apiKey: 'EMPTY',
      maxConcurrentCompletions: 4,
      supportsN: false,
      requestTimeoutMs: 5_000,
      maxRetries: 0,
    });
  });
  afterAll(() => grader.close());

  const judgeCall = (call: string) => ({ llm, call, seed: 0, sampling: SSP_DEFAULTS.judge });
  const judge = (answer: string) =>
    judgeCorrectness(taskOf(chain, 1).question, answer, chain.founder, judgeCall(SSP_CALLS.judge));

  test('the judge passes an answer that names the reference and no other entity of the world', async () => {
    await expect(judge(`the founder is ${chain.founder}`)).resolves.toMatchObject({
      exactMatch: false,
      correct: true,
      judge: { verdict: 'correct' },
    });
    await expect(judge(`${chain.founder} or ${other.founder}`)).resolves.toMatchObject({ correct: false });
    await expect(judge(other.founder)).resolves.toMatchObject({
      correct: false,
      judge: { verdict: 'wrong' },
    });
    await expect(judge('nobody I know')).resolves.toMatchObject({ correct: false });
  });

  const text = (c: Chain) =>
    documentsOf(c)
      .map((d, i) => `Doc ${i + 1} (Title: "${d.title}") ${d.text}`)
      .join('\n');
  const verify = (materials: string, hops: 1 | 2) => {
    const task = taskOf(chain, hops);
    return verifyQuestion({
      llm,
      call: SSP_CALLS.ragVerifier,
      messages: ragVerifierMessages(materials, task.question),
      question: task.question,
      groundTruth: task.answer,
      seed: 0,
      sampling: SSP_DEFAULTS.verifier,
      judge: judgeCall(SSP_CALLS.verificationJudge),
    });
  };

  test('RAG verification passes a question only when the materials hold its chain', async () => {
    const both = `${text(other)}\n\n${text(chain)}`;
    await expect(verify(both, 1)).resolves.toMatchObject({ passed: true, answer: chain.founder });
    await expect(verify(both, 2)).resolves.toMatchObject({ passed: true, answer: chain.birthplace });
    // The town's document alone answers one hop, not two.
    const townOnly = `Doc 1 (Title: "${chain.town}") ${documentsOf(chain)[0].text}`;
    await expect(verify(townOnly, 1)).resolves.toMatchObject({ passed: true });
    await expect(verify(townOnly, 2)).resolves.toMatchObject({ passed: false, failure: 'wrong_answer' });
    await expect(verify(text(other), 1)).resolves.toMatchObject({ passed: false, answer: 'unknown' });
  });

  test("a judge call whose prompt is not SSP's judge prompt is refused, naming the call", async () => {
    await expect(
      llm.chat({
        role: 'judge',
        call: SSP_CALLS.judge,
        messages: [{ role: 'user', content: 'hi' }],
        n: 1,
        seed: 0,
        temperature: 0,
        topP: 1,
        maxTokens: 8,
      }),
    ).rejects.toThrow(/400.*recipe's own prompt of the call "ssp\.judge"/);
  });
});
