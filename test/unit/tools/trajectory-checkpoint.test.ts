import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { InferencePool } from '../../../activities/clients/inference';
import { LocalStore } from '../../../activities/clients/storage';
import { getJson } from '../../../activities/clients/storage/codec';
import { unitPartKey } from '../../../activities/clients/storage/keys';
import { recipeContext } from '../../../activities/stages/deps';
import { loadWorkerEnv } from '../../../config/env';
import { trajectoryCheckpoint } from '../../../activities/recipes/search-rollout';
import { runSearchLoop } from '../../../activities/tools/search-loop';
import type { SearchLoopSpec, Trajectory } from '../../../activities/tools/types';
import { configFor } from '../../support/recipe-harness';
import { fakeLlm, fakeRetriever } from '../../support/search-fakes';

/** Trajectory checkpoints in the run's storage, as recipes get them from their stage context. */
describe('stored trajectory checkpoints', () => {
  let dir: string;
  let store: LocalStore;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'traj-'));
    store = new LocalStore(dir);
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const context = () =>
    recipeContext(
      {
        store,
        env: loadWorkerEnv({ SELFPLAY_STORAGE: dir, SELFPLAY_INFERENCE_CONCURRENCY: '1' }),
        inference: new InferencePool(),
        recipes: {},
      },
      { config: configFor({ recipe: 'spice' }), runId: 'r1', iteration: 3, shard: 2, versions: {} },
      'solve',
      new AbortController().signal,
      undefined,
    );

  test('keys live under the unit of the stage and shard; names are checked', () => {
    expect(unitPartKey('r1', 3, 'solve', 2, 17, 'traj-02')).toBe(
      'runs/r1/iter-000003/solve/shard-0002/unit-0017/traj-02.json.gz',
    );
    expect(() => unitPartKey('r1', 3, 'solve', 2, 17, '../x')).toThrow('not usable in a storage key');
  });

  test('a retried shard resumes the trajectory from storage without resampling finished turns', async () => {
    const turns = ['<search>one</search>', '<search>two</search>', '<answer>done</answer>'];
    const spec = (llm: SearchLoopSpec['llm']): SearchLoopSpec => ({
      llm,
      retriever: fakeRetriever(),
      messages: [{ role: 'user', content: 'Question?' }],
      role: 'solver',
      call: 'test.solver',
      seed: 1,
      temperature: 1,
      topP: 1,
      syntax: 'search_tags',
      finalTags: ['answer'],
      maxTurns: 10,
      maxTokens: 1000,
      topK: 3,
      passageTokens: 100,
      checkpoint: trajectoryCheckpoint(context(), 17, '02'),
    });
    const first = fakeLlm(turns.slice(0, 2));
    await expect(runSearchLoop(spec(first.llm))).rejects.toThrow('no scripted turn 2');
    const key = 'runs/r1/iter-000003/solve/shard-0002/unit-0017/traj-02.json.gz';
    expect((await getJson<Trajectory>(store, key))?.turns).toHaveLength(2);

    const retry = fakeLlm(turns.slice(2));
    const t = await runSearchLoop(spec(retry.llm));
    expect(retry.requests).toHaveLength(1);
    expect(retry.requests[0]?.messages.at(-1)?.content).toContain('<search>two</search>');
    expect(t.stop).toBe('final');
    expect(t.searches).toEqual(['one', 'two']);
    expect(await getJson<Trajectory>(store, key)).toEqual(t);
  });
});
