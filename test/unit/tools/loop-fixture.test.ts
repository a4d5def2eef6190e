import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ChatMessage } from '../../../activities/clients/trainer-contract';
import { runSearchLoop } from '../../../activities/tools/search-loop';
import type { Trajectory } from '../../../activities/tools/types';
import { fakeLlm, fakeRetriever } from '../../support/search-fakes';

/**
 * The trajectory the kernel's pytest trains on (infra/kernels/tests/test_search_loop_mask.py) is one this
 * loop makes: non-BMP text before and inside observations, an invalid call, both kinds of observation. This
 * test fails when the loop's output drifts from the fixture; `SELFPLAY_UPDATE_FIXTURES=1` rewrites it.
 */
const FIXTURE = path.join(__dirname, '../../fixtures/search-loop/trajectory.json');

const messages: ChatMessage[] = [{ role: 'user', content: 'Question: which bird 🦜 talks? Search first.' }];

async function makeTrajectory(): Promise<Trajectory> {
  const { llm } = fakeLlm([
    '<think>Parrots 🦜 talk; let me check 𝔸.</think>\n<search>talking parrot 🦜</search>',
    '<think>Oops.</think>\n<search></search>',
    '<think>Größe? 😀</think>\n<search>parrot vocabulary</search>',
    '<think>Enough.</think>\n<answer>the parrot 🦜</answer>',
  ]);
  const retriever = fakeRetriever({
    'talking parrot 🦜': [
      { id: 'a', title: 'Parrot 🦜', text: 'Parrots 🐦 can imitate speech.', score: 2 },
      { id: 'b', title: 'Mynah', text: 'Mynahs talk too. 𝔸𝔹', score: 1 },
    ],
  });
  return runSearchLoop({
    llm,
    retriever,
    messages,
    role: 'solver',
    call: 'fixture.solver',
    seed: 0,
    temperature: 1,
    topP: 1,
    syntax: 'search_tags',
    finalTags: ['answer'],
    maxTurns: 10,
    maxTokens: 4096,
    topK: 3,
    passageTokens: 200,
  });
}

test('the kernel fixture is the trajectory the loop makes', async () => {
  const made = { messages, trajectory: await makeTrajectory() };
  if (process.env.SELFPLAY_UPDATE_FIXTURES === '1') {
    await writeFile(FIXTURE, `${JSON.stringify(made, null, 2)}\n`);
  }
  expect(JSON.parse(await readFile(FIXTURE, 'utf8'))).toEqual(made);
  expect(made.trajectory.stop).toBe('final');
  expect(made.trajectory.lossMaskSpans).toHaveLength(3);
});
