import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { LocalStore } from '../../activities/clients/storage';
import { putJson } from '../../activities/clients/storage/codec';
import { checkpointPrefix, snapshotPrefix } from '../../activities/clients/storage/keys';
import { InferencePool } from '../../activities/clients/inference';
import { promotedKey } from '../../activities/continual/keys';
import { RECIPES } from '../../activities/recipes';
import { commitActivities } from '../../activities/stages/commit';
import { lineageActivities } from '../../activities/stages/lineage';
import { retentionActivities } from '../../activities/stages/retention';
import { loadWorkerEnv } from '../../config/env';
import type { RunConfig } from '../../config/schema';
import type { PromotedPointer } from '../../contracts/continual';
import type { Lineage } from '../../contracts/lineage';
import type { IterationMetrics, RetentionInput, RetentionResult } from '../../contracts/selfplay';
import { configFor } from '../support/recipe-harness';

/** A run of the one policy `p`. */
const config = (extra: Record<string, unknown> = {}): RunConfig =>
  configFor({ recipe: 'spice', training: { policy: 'p' }, ...extra });
const metrics = { recipe: {}, train: {}, stages: {}, reusedUnits: 0 } as unknown as IterationMetrics;

/**
 * Retention over a local store, with commits made by the commit activity and saves laid out as the kernel
 * writes them (files, then the COMPLETE marker).
 */
describe('retention after a commit', () => {
  const store = new LocalStore(mkdtempSync(path.join(os.tmpdir(), 'retention-')));
  const deps = { store, env: loadWorkerEnv({}), inference: new InferencePool(), recipes: RECIPES };
  const commits = commitActivities(deps);
  const lineages = lineageActivities(deps);
  const retention = retentionActivities(deps);
  const retain = (
    input: Partial<RetentionInput> & Pick<RetentionInput, 'lineages' | 'head'>,
  ): Promise<RetentionResult> =>
    new MockActivityEnvironment().run(() =>
      retention.applyRetention({ retention: { keepLast: 2, keepEvery: 0 }, maxStaleness: 0, ...input }),
    );

  /** A checkpoint and a snapshot of `version`, written as the kernel writes them. */
  const save = async (runId: string, version: number): Promise<void> => {
    for (const prefix of [checkpointPrefix(runId, 'p', version), snapshotPrefix(runId, 'p', version)]) {
      await store.put(`${prefix}/weights.safetensors`, 'w'.repeat(100));
      await store.put(`${prefix}/COMPLETE`, '{}');
    }
  };
  /** Iteration `n` of `runId` trained version `version` and committed it. */
  const trainAndCommit = async (runId: string, n: number, version = n): Promise<void> => {
    await save(runId, version);
    await commits.commit({
      runId,
      iteration: n,
      config: config(),
      policies: {
        p: {
          version,
          checkpointUri: store.uri(checkpointPrefix(runId, 'p', version)),
          snapshot: {
            policy: 'p',
            version,
            uri: store.uri(snapshotPrefix(runId, 'p', version)),
            format: 'full',
          },
        },
      },
      metrics,
      artifacts: {},
    });
  };
  /** The versions whose checkpoint is still stored (complete or not). */
  const checkpoints = async (runId: string): Promise<number[]> => {
    const keys = await store.list(`runs/${runId}/checkpoints/p/`);
    return [...new Set(keys.map((k) => Number(/\/v(\d+)\//.exec(k)![1])))];
  };

  test('keeps the newest commits, forks, promoted commits and versions in flight; deletes the rest, once', async () => {
    const runId = 'keep';
    await save(runId, 0);
    for (const n of [1, 2, 3, 4, 5, 6]) await trainAndCommit(runId, n);
    // Iteration 7 is training: its checkpoint is being written, nothing names it yet.
    await store.put(`${checkpointPrefix(runId, 'p', 7)}/weights.safetensors`, 'partial');
    // Another run started from iteration 2 (it recorded the fork), and a continual lineage promoted 3.
    await commits.loadRunStart({ runId: 'fork', config: config({ resumeFrom: { runId, iteration: 2 } }) });
    await putJson(store, promotedKey('nightly'), {
      runId,
      iteration: 3,
      policy: 'p',
      policyVersion: 3,
      score: 0.5,
      jobId: 'job',
      evalKey: 'eval',
    } satisfies PromotedPointer);

    const first = await retain({ lineages: [{ id: runId }], head: 6 });
    expect(first.deleted.sort()).toEqual(
      [0, 1, 4].flatMap((v) => [checkpointPrefix(runId, 'p', v), snapshotPrefix(runId, 'p', v)]).sort(),
    );
    expect(await checkpoints(runId)).toEqual([2, 3, 5, 6, 7]);
    expect(await store.exists(`${snapshotPrefix(runId, 'p', 6)}/COMPLETE`)).toBe(true);
    // Applied again (a retried activity), it finds nothing more to delete.
    expect((await retain({ lineages: [{ id: runId }], head: 6 })).deleted).toEqual([]);
    // keepLast "all" deletes nothing at all.
    await trainAndCommit(runId, 7);
    await trainAndCommit(runId, 8);
    const all = await retain({
      lineages: [{ id: runId }],
      head: 8,
      retention: { keepLast: 'all', keepEvery: 0 },
    });
    expect(all.deleted).toEqual([]);
    expect(await checkpoints(runId)).toEqual([2, 3, 5, 6, 7, 8]);
  });

  test('a kept commit naming weights outside this store (storage moved) makes the pass delete nothing', async () => {
    const runId = 'moved';
    for (const n of [1, 2, 3]) await trainAndCommit(runId, n);
    // The run's objects copied to another directory, its manifests still naming the first one.
    const elsewhere = new LocalStore(mkdtempSync(path.join(os.tmpdir(), 'retention-moved-')));
    for (const key of await store.list(`runs/${runId}/`)) await elsewhere.put(key, (await store.get(key))!);
    const refused = await new MockActivityEnvironment()
      .run(() =>
        retentionActivities({ ...deps, store: elsewhere }).applyRetention({
          lineages: [{ id: runId }],
          head: 3,
          retention: { keepLast: 1, keepEvery: 0 },
          maxStaleness: 0,
        }),
      )
      .catch((e: Error & { type?: string }) => e);
    expect(refused).toMatchObject({ type: 'InvalidConfig', nonRetryable: true });
    expect((refused as Error).message).toContain("which is not in this worker's storage");
    expect(await elsewhere.list(`runs/${runId}/checkpoints/`)).toHaveLength(6);
  });

  test('deletes the COMPLETE marker first, and finishes a pass that crashed midway', async () => {
    const runId = 'crash';
    for (const n of [1, 2, 3]) await trainAndCommit(runId, n);
    const deletes: string[] = [];
    const original = store.delete.bind(store);
    let calls = 0;
    const spy = jest.spyOn(store, 'delete').mockImplementation(async (key) => {
      deletes.push(key);
      // The worker dies after its first two deletes.
      if (++calls > 2) throw new Error('worker lost');
      return original(key);
    });
    await expect(retain({ lineages: [{ id: runId }], head: 3 })).rejects.toThrow('worker lost');
    const checkpointOne = checkpointPrefix(runId, 'p', 1);
    const markers = [checkpointOne, snapshotPrefix(runId, 'p', 1)].map((prefix) => `${prefix}/COMPLETE`);
    expect(deletes.slice(0, 2).sort()).toEqual(markers.sort());
    spy.mockRestore();
    // What the crashed pass left is no complete save, and the next pass deletes it.
    expect(await store.exists(`${checkpointOne}/COMPLETE`)).toBe(false);
    await retain({ lineages: [{ id: runId }], head: 3 });
    expect(await checkpoints(runId)).toEqual([2, 3]);
    expect(await store.list(`runs/${runId}/snapshots/p/v000001`)).toEqual([]);
  });

  test('after a rollback: the abandoned versions go, the commit rolled back to stays, and a deleted commit is refused clearly', async () => {
    const runId = 'rolled';
    for (const n of [1, 2, 3, 4]) await trainAndCommit(runId, n);
    const lineageList: Lineage[] = [
      { id: runId },
      { id: `${runId}.r1`, from: { lineage: runId, iteration: 2 } },
    ];
    for (const n of [3, 4, 5]) await trainAndCommit(`${runId}.r1`, n, n + 10);
    const { deleted } = await retain({ lineages: lineageList, head: 5 });
    expect(deleted).toContain(checkpointPrefix(runId, 'p', 3));
    expect(await checkpoints(runId)).toEqual([2]);
    expect(await checkpoints(`${runId}.r1`)).toEqual([14, 15]);

    // Rolling back to 1, forking or evaluating it now says why instead of failing at the restore.
    const refused = await lineages
      .lineageStart({ from: { lineage: runId, iteration: 1 }, config: config() })
      .catch((e: Error & { type?: string }) => e);
    expect(refused).toMatchObject({ type: 'InvalidInput', nonRetryable: true });
    expect((refused as Error).message).toMatch(
      /^iteration 1 of run "rolled" can no longer be restored: its checkpoint of policy p \(.*\) is not in storage any more; training\.retention keeps/,
    );
    const resume = await commits
      .loadRunStart({
        runId: 'late-fork',
        config: config({ resumeFrom: { runId: `${runId}.r1`, iteration: 3 } }),
      })
      .catch((e: Error & { type?: string }) => e);
    expect(resume).toMatchObject({ type: 'InvalidConfig' });
    expect((resume as Error).message).toContain(
      'resumeFrom: iteration 3 of run "rolled.r1" can no longer be restored',
    );
    await expect(
      lineages.lineageStart({ from: { lineage: runId, iteration: 2 }, config: config() }),
    ).resolves.toMatchObject({ nextIteration: 3, policies: { p: { version: 2 } } });
  });
});
