import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../../../activities/clients/storage';
import { putJson } from '../../../activities/clients/storage/codec';
import { latestKey, manifestKey } from '../../../activities/clients/storage/keys';
import { committedState } from '../../../cli/state';

describe('selfplay state', () => {
  const store = new LocalStore(mkdtempSync(path.join(os.tmpdir(), 'state-cli-')));
  const commit = async (iteration: number, state?: unknown) => {
    const stateKey = state === undefined ? undefined : `runs/r/iter-${iteration}/recipe-state.json.gz`;
    if (stateKey) await putJson(store, stateKey, state);
    await putJson(store, manifestKey('r', iteration), {
      iteration,
      recipe: 'mae',
      ...(stateKey ? { recipeStateKey: stateKey } : {}),
    });
    await putJson(store, latestKey('r'), {
      iteration,
      manifestKey: manifestKey('r', iteration),
      versions: { policy: iteration },
    });
  };

  test('lists each part of the committed state with its size and a sample, latest or at an iteration', async () => {
    await commit(1, {
      pool: ['q1', 'q2'],
      pairs: [],
      memory: { 'c1/qa': [1, 2], 'c2/mc': [3] },
      capacity: 10,
    });
    await commit(2, {
      pool: ['q1', 'q2', 'q3', 'q4'],
      pairs: [{ q: 'q1', a: 'a' }],
      memory: {},
      capacity: 10,
    });

    const latest = await committedState(store, 'r');
    expect(latest.iteration).toBe(2);
    expect(latest.parts).toEqual([
      { name: 'pool', size: 4, sample: ['q1', 'q2', 'q3'] },
      { name: 'pairs', size: 1, sample: [{ q: 'q1', a: 'a' }] },
      { name: 'memory', size: 0, sample: [] },
      { name: 'capacity', size: 1, sample: [10] },
    ]);
    const first = await committedState(store, 'r', 1);
    expect(first.parts.find((p) => p.name === 'memory')).toEqual({
      name: 'memory',
      size: 2,
      sample: [{ 'c1/qa': [1, 2] }, { 'c2/mc': [3] }],
    });
  });

  test('a recipe without state and a missing run are told apart', async () => {
    await putJson(store, manifestKey('plain', 1), { iteration: 1, recipe: 'spice' });
    await putJson(store, latestKey('plain'), {
      iteration: 1,
      manifestKey: manifestKey('plain', 1),
      versions: { policy: 1 },
    });
    expect((await committedState(store, 'plain')).parts).toEqual([]);
    await expect(committedState(store, 'nobody')).rejects.toThrow('no committed iteration');
    await expect(committedState(store, 'r', 9)).rejects.toThrow('no committed iteration 9');
  });
});
