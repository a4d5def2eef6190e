import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../../activities/clients/storage';
import { getJson, putJson } from '../../activities/clients/storage/codec';
import { latestKey, lineageKey, manifestKey } from '../../activities/clients/storage/keys';
import { commitActivities, configHash } from '../../activities/stages/commit';
import { InferencePool } from '../../activities/clients/inference';
import { RECIPES } from '../../activities/recipes';
import { loadWorkerEnv } from '../../config/env';
import { resolveRunConfig, type RunConfig } from '../../config/schema';
import type { CommitInput, IterationMetrics } from '../../contracts/selfplay';
import type { LineageRecord } from '../../contracts/lineage';

const config = (extra: Record<string, unknown> = {}): RunConfig => {
  const r = resolveRunConfig({ recipe: 'spice', ...extra });
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.config;
};

const metrics: IterationMetrics = {
  recipe: {
    documents: 1,
    validTaskRate: 1,
    invalidReasons: {},
    passRateHistogram: [0, 1],
    zeroAdvantageFraction: 0,
    meanRewardByRole: {},
    rowsByRole: {},
    extra: {},
  },
  train: {},
  stages: {},
  reusedUnits: 0,
};

describe('commit and run start', () => {
  const store = new LocalStore(mkdtempSync(path.join(os.tmpdir(), 'commit-')));
  const acts = commitActivities({
    store,
    env: loadWorkerEnv({}),
    inference: new InferencePool(),
    recipes: RECIPES,
  });
  const commit = (runId: string, iteration: number, version = iteration): Promise<unknown> =>
    acts.commit({
      runId,
      iteration,
      config: config(),
      policies: { policy: { version } },
      metrics,
      artifacts: {},
    } satisfies CommitInput);

  test('a fresh run starts at iteration 1, version 0', async () => {
    await expect(acts.loadRunStart({ runId: 'fresh', config: config() })).resolves.toEqual({
      nextIteration: 1,
      policies: { policy: { version: 0 } },
      configHash: configHash(config()),
    });
  });

  test('commit writes the manifest, then moves latest forward only; a repeated commit changes nothing', async () => {
    await commit('a', 1);
    await commit('a', 2);
    const manifest = await getJson(store, manifestKey('a', 2));
    await commit('a', 2, 99);
    expect(await getJson(store, manifestKey('a', 2))).toEqual(manifest);
    await commit('a', 1);
    expect(await getJson(store, latestKey('a'))).toMatchObject({ iteration: 2, versions: { policy: 2 } });
    await expect(acts.loadRunStart({ runId: 'a', config: config() })).resolves.toEqual({
      nextIteration: 3,
      policies: { policy: { version: 2 } },
      configHash: configHash(config()),
    });
  });

  test('resumeFrom continues after the named commit; mistakes fail non-retryably with the fix', async () => {
    await commit('src', 1);
    await commit('src', 2);
    await expect(
      acts.loadRunStart({ runId: 'fork', config: config({ resumeFrom: { runId: 'src', iteration: 1 } }) }),
    ).resolves.toEqual({
      nextIteration: 2,
      policies: { policy: { version: 1 } },
      resumedFrom: { runId: 'src', iteration: 1 },
      configHash: configHash(config({ resumeFrom: { runId: 'src', iteration: 1 } })),
    });
    const refusal = async (runId: string, resumeFrom: unknown): Promise<{ type: string; message: string }> =>
      await acts.loadRunStart({ runId, config: config({ resumeFrom }) }).then(
        () => ({ type: 'none', message: 'resolved' }),
        (e: { type: string; message: string }) => e,
      );
    const missing = await refusal('x', 'missing-run');
    expect(missing.type).toBe('InvalidConfig');
    expect(missing.message).toContain('no committed iteration');
    expect((await refusal('x', { runId: 'src', iteration: 7 })).message).toContain(
      'no committed iteration 7',
    );
    expect((await refusal('src', { runId: 'src', iteration: 1 })).message).toContain('start a new runId');
    expect((await refusal('a', 'src')).message).toContain('already has commits');
  });

  test('a storage failure while reading the run to resume from is retried, not called a config mistake', async () => {
    /** A store whose objects under `runs/down/` cannot be read (an outage, throttling). */
    class Unreachable extends LocalStore {
      override get(key: string): Promise<Buffer | undefined> {
        return key.startsWith('runs/down/')
          ? Promise.reject(new Error('storage unreachable'))
          : super.get(key);
      }
    }
    const flaky = commitActivities({
      store: new Unreachable(store.root),
      env: loadWorkerEnv({}),
      inference: new InferencePool(),
      recipes: RECIPES,
    });
    const failure = await flaky
      .loadRunStart({ runId: 'after-down', config: config({ resumeFrom: { runId: 'down', iteration: 1 } }) })
      .catch((e: Error & { type?: string }) => e);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toBe('storage unreachable');
    expect((failure as { type?: string }).type).toBeUndefined();
  });

  test('resumeFrom a run that rolled back reads the iterations it kept, never the abandoned ones', async () => {
    // rb committed 1..3 (versions 1..3), rolled back to 1 and went on in rb.r1 with iteration 2 at version 7.
    for (const n of [1, 2, 3]) await commit('rb', n);
    await putJson(store, lineageKey('rb'), {
      v: 1,
      runId: 'rb',
      lineages: [{ id: 'rb' }, { id: 'rb.r1', from: { lineage: 'rb', iteration: 1 } }],
    } satisfies LineageRecord);
    await commit('rb.r1', 2, 7);
    // Each start is a new run that has committed nothing of its own.
    let runs = 0;
    const start = (resumeFrom: unknown) =>
      acts.loadRunStart({ runId: `from-rb-${++runs}`, config: config({ resumeFrom }) });

    await expect(start('rb')).resolves.toMatchObject({
      nextIteration: 3,
      policies: { policy: { version: 7 } },
      resumedFrom: { runId: 'rb.r1', iteration: 2 },
    });
    await expect(start({ runId: 'rb', iteration: 2 })).resolves.toMatchObject({
      policies: { policy: { version: 7 } },
      resumedFrom: { runId: 'rb.r1', iteration: 2 },
    });
    await expect(start({ runId: 'rb', iteration: 1 })).resolves.toMatchObject({
      nextIteration: 2,
      policies: { policy: { version: 1 } },
      resumedFrom: { runId: 'rb', iteration: 1 },
    });
    // rb's iteration 3 was abandoned: not on the kept path although its manifest still exists.
    const abandoned = await start({ runId: 'rb', iteration: 3 }).catch((e: Error & { type: string }) => e);
    expect(abandoned).toMatchObject({ type: 'InvalidConfig' });
    expect((abandoned as Error).message).toContain('run "rb" has no committed iteration 3');
  });

  test("a new run under another run's rollback lineage id is refused: that storage is the other run's", async () => {
    await commit('own', 1);
    await putJson(store, lineageKey('own'), {
      v: 1,
      runId: 'own',
      lineages: [{ id: 'own' }, { id: 'own.r1', from: { lineage: 'own', iteration: 1 } }],
    } satisfies LineageRecord);
    const refused = await acts
      .loadRunStart({ runId: 'own.r1', config: config() })
      .catch((e: Error & { type: string; nonRetryable: boolean }) => e);
    expect(refused).toMatchObject({ type: 'InvalidConfig', nonRetryable: true });
    expect((refused as Error).message).toContain('"own.r1" is a rollback lineage of run "own"');
    // An id of the same shape that no run has as a lineage is an ordinary new run; so is the owner itself.
    await expect(acts.loadRunStart({ runId: 'own.r2', config: config() })).resolves.toMatchObject({
      nextIteration: 1,
    });
    await expect(acts.loadRunStart({ runId: 'own', config: config() })).resolves.toMatchObject({
      lineages: [{ id: 'own' }, { id: 'own.r1' }],
    });
  });
});
