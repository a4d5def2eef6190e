import type { WorkflowHandle } from '@temporalio/client';
import { getJson } from '../../activities/clients/storage/codec';
import { latestKey, lineageKey, manifestKey } from '../../activities/clients/storage/keys';
import { loadManifests } from '../../cli/report';
import { committedState } from '../../cli/state';
import { sendRollback } from '../../cli/lineage';
import type { IterationInput, Manifest } from '../../contracts/selfplay';
import type { LineageRecord } from '../../contracts/lineage';
import { selfPlayRun } from '../../workflows';
import {
  forkUpdate,
  pauseUpdate,
  progressQuery,
  resumeUpdate,
  type RunProgress,
} from '../../workflows/messages';
import { ITERATION, MEAN_REWARD, VALID_TASK_RATE } from '../../workflows/search-attributes';
import { selfplay } from '../support/cli';
import { startStack, uniqueId, type TestStack } from '../support/stack';
import { payloadValue } from '../support/temporal-client';
import { waitFor } from '../support/wait';

/**
 * Rollback and fork on the real stack (Temporal, MinIO, the scripted LLM, the recording trainer). MAE keeps
 * recipe state (its pools) that changes every iteration, so "the state of iteration k" is observable.
 */
describe('rollback and fork', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack({ llm: { latencyMs: 100 } });
  });
  afterAll(() => stack.close());

  const config = (runId: string, overrides: Record<string, unknown> = {}) =>
    stack.runConfig({ recipe: 'mae', groupSize: 3, seed: 5, training: { policy: runId }, ...overrides });
  const start = (runId: string, overrides: Record<string, unknown> = {}) =>
    stack.client.workflow.start(selfPlayRun, {
      workflowId: runId,
      taskQueue: `${stack.queuePrefix}-orchestrator`,
      args: [config(runId, overrides)],
    });
  const progress = (handle: WorkflowHandle<typeof selfPlayRun>): Promise<RunProgress> =>
    handle.query(progressQuery);
  const manifest = (lineage: string, n: number) => getJson<Manifest>(stack.store, manifestKey(lineage, n));
  /** The input the iteration child `{lineage}/iter-{n}` was started with. */
  const childInput = async (lineage: string, n: number): Promise<IterationInput> => {
    const history = await stack.client.workflow
      .getHandle(`${lineage}/iter-${String(n).padStart(6, '0')}`)
      .fetchHistory();
    const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    return payloadValue<IterationInput>(payload!);
  };
  /** `selfplay ARGS` as a process, against this stack's Temporal and storage. */
  const cli = (...args: string[]) => selfplay(args, stack.cliEnv);

  test('rollback to 1 after 3 commits re-runs 2.. in a new lineage from 1; fork from 2 starts a new run at 3', async () => {
    const runId = uniqueId('rb');
    const r1 = `${runId}.r1`;
    await stack.withWorkers(async () => {
      // Continued-as-new every 2 iterations: the lineages travel with the carried state.
      const handle = await start(runId, { iterations: 5, continueAsNewEvery: 2 });
      await waitFor('3 commits', async () => (await progress(handle)).lastCommitted >= 3);
      await handle.executeUpdate(pauseUpdate);
      const before = await progress(handle);

      // Refusals say why and change nothing.
      const refused = async (to: number, reason: string) =>
        expect(sendRollback(stack.client, runId, to)).rejects.toThrow(
          `${runId} refused rollback: rollback: ${reason}`,
        );
      await refused(0, "iteration 0 is before the run's first committed state (iteration 1)");
      await refused(99, `iteration 99 is not committed (last committed: ${before.lastCommitted})`);
      // A commit that cannot be read refuses the rollback before anything is cancelled.
      const twoKey = manifestKey(runId, 2);
      const saved = (await stack.store.get(twoKey))!;
      await stack.store.delete(twoKey);
      await refused(2, `${runId} has no committed iteration 2`);
      await stack.store.put(twoKey, saved);
      const viaCli = await cli('rollback', runId, '--to', '99');
      expect(viaCli.code).toBe(1);
      expect(viaCli.out).toContain(`${runId} refused rollback: rollback: iteration 99 is not committed`);
      expect(await progress(handle)).toMatchObject({
        lineage: runId,
        lastCommitted: before.lastCommitted,
        iterationInFlight: before.iterationInFlight,
        state: 'paused',
      });
      expect(await getJson(stack.store, lineageKey(runId))).toBeUndefined();
      const abandoned = [2, 3];
      const abandonedManifests = await Promise.all(abandoned.map((n) => manifest(runId, n)));

      // The rollback, through the CLI: the iteration in flight (held by the pause) is cancelled.
      const rolled = await cli('rollback', runId, '--to', '1');
      expect(rolled.out).toContain(
        `${runId}: rolled back to iteration 1 (${runId} v1); going on with iteration 2 in lineage ${r1}, paused`,
      );
      expect(rolled.code).toBe(0);
      const after = await progress(handle);
      expect(after).toMatchObject({ lastCommitted: 1, iteration: 1, versions: { [runId]: 1 }, lineage: r1 });
      expect(after.iterationInFlight).toBe(false);
      expect(after.recent.map((r) => r.iteration)).toEqual([1]);
      // The list's columns show iteration 1 again, with its metrics, not the abandoned iteration's.
      const attributes = (await handle.describe()).typedSearchAttributes;
      expect(attributes.get(ITERATION)).toBe(1);
      expect(attributes.get(MEAN_REWARD)).toBe(after.recent[0]?.meanReward);
      expect(attributes.get(VALID_TASK_RATE)).toBe(after.recent[0]?.validTaskRate);
      expect(after.lineagePath).toEqual([
        { id: runId, after: 0, upTo: 1 },
        { id: r1, after: 1 },
      ]);
      expect(await getJson<LineageRecord>(stack.store, lineageKey(runId))).toEqual({
        v: 1,
        runId,
        lineages: [{ id: runId }, { id: r1, from: { lineage: runId, iteration: 1 } }],
      });

      await handle.executeUpdate(resumeUpdate);
      const outcome = await handle.result();
      expect(outcome.lastCommitted).toBe(5);

      // 2.. re-ran under the new lineage from iteration 1's state; the abandoned commits are untouched.
      const one = (await manifest(runId, 1))!;
      const rerun = await childInput(r1, 2);
      expect(rerun).toMatchObject({
        runId: r1,
        iteration: 2,
        policies: one.policies,
        recipeStateKey: one.recipeStateKey,
      });
      for (const [i, n] of abandoned.entries()) {
        const old = abandonedManifests[i]!;
        expect(await manifest(runId, n)).toEqual(old);
        const fresh = (await manifest(r1, n))!;
        expect(fresh.runId).toBe(r1);
        expect(fresh.metrics.reusedUnits).toBe(0);
        for (const keys of Object.values(fresh.artifacts))
          for (const key of keys) expect(key.startsWith(`runs/${r1}/iter-`)).toBe(true);
        expect(fresh.policies[runId]?.checkpointUri).not.toBe(old.policies[runId]?.checkpointUri);
        expect(fresh.recipeStateKey).not.toBe(old.recipeStateKey);
      }
      expect((await manifest(r1, 5))!.policies[runId]?.version).toBe(5);

      // The trainer was restored to version 1's checkpoint, then stepped under the new lineage's keys.
      const trainer = stack.trainer.stats();
      expect(trainer.restores).toContainEqual({
        policy: runId,
        uri: one.policies[runId]!.checkpointUri!.replace(/\/+$/, ''),
        version: 1,
      });
      const steps = trainer.steps.filter((s) => s.policy === runId);
      expect(steps.filter((s) => s.runId === r1).map((s) => [s.iteration, s.baseVersion])).toEqual([
        [2, 1],
        [3, 2],
        [4, 3],
        [5, 4],
      ]);
      // Every step of this run, in both lineages, is recorded as applied exactly once; no key twice.
      for (const s of steps) expect(trainer.appliedByKey[s.key]).toBe(1);
      for (const count of Object.values(trainer.appliedByKey)) expect(count).toBe(1);

      // status, state and report follow the lineage; the report shows only the kept iterations.
      expect((await progress(handle)).lineage).toBe(r1);
      const kept = await loadManifests(stack.store, runId);
      expect(kept.map((m) => [m.iteration, m.runId])).toEqual([
        [1, runId],
        [2, r1],
        [3, r1],
        [4, r1],
        [5, r1],
      ]);
      const state = await committedState(stack.store, runId);
      expect(state.iteration).toBe(5);
      expect(state.stateKey).toBe((await manifest(r1, 5))!.recipeStateKey);
      expect((await committedState(stack.store, runId, 3)).stateKey).toBe(
        (await manifest(r1, 3))!.recipeStateKey,
      );

      // Fork from the kept iteration 2 (held by the new lineage) into a new run; the run is not touched.
      const forkId = uniqueId('fork');
      const badFork = await cli('fork', runId, '--from', '9', '--id', forkId);
      expect(badFork.code).toBe(1);
      expect(badFork.out).toContain(`fork of ${runId} refused: run "${runId}" has no committed iteration 9`);
      const sameId = await cli('fork', runId, '--from', '2', '--id', runId);
      expect(sameId.out).toContain('--id: the new run needs an id of its own');
      const forked = await cli('fork', runId, '--from', '2', '--id', forkId, '--set', 'iterations=3');
      expect(forked.out).toContain(
        `forked ${runId} at iteration 2 (${r1}): started run ${forkId}, going on with iteration 3`,
      );
      expect(forked.code).toBe(0);
      const fork = stack.client.workflow.getHandle<typeof selfPlayRun>(forkId);
      expect(await fork.result()).toMatchObject({ runId: forkId, lastCommitted: 3 });
      expect((await progress(fork)).resumedFrom).toEqual({ runId: r1, iteration: 2 });
      const two = (await manifest(r1, 2))!;
      expect(await childInput(forkId, 3)).toMatchObject({
        runId: forkId,
        iteration: 3,
        policies: two.policies,
        recipeStateKey: two.recipeStateKey,
      });
      expect(await manifest(forkId, 2)).toBeUndefined();
      expect((await manifest(forkId, 3))!.policies[runId]?.version).toBe(3);
      expect(await getJson(stack.store, latestKey(r1))).toMatchObject({ iteration: 5 });
      expect(await getJson(stack.store, lineageKey(forkId))).toBeUndefined();
    });
  }, 360_000); // nine iterations over three lineages and a fork: over 180 s on a loaded 2-core machine

  test('a second rollback returns to an iteration of an earlier lineage', async () => {
    const runId = uniqueId('rb2');
    const [r1, r2] = [`${runId}.r1`, `${runId}.r2`];
    await stack.withWorkers(async () => {
      const handle = await start(runId, { iterations: 4 });
      const rollBackAt = async (commits: number, to: number) => {
        await waitFor(`${commits} commits`, async () => (await progress(handle)).lastCommitted >= commits);
        await handle.executeUpdate(pauseUpdate);
        const rolled = await sendRollback(stack.client, runId, to);
        await handle.executeUpdate(resumeUpdate);
        return rolled;
      };
      expect(await rollBackAt(3, 2)).toMatchObject({ lineage: r1, lastCommitted: 2 });
      // Iteration 1 is held by the run's first lineage, before the rollback to 2.
      const second = await rollBackAt(3, 1);
      expect(second).toMatchObject({ lineage: r2, lastCommitted: 1, versions: { [runId]: 1 } });
      expect(second.lineagePath).toEqual([
        { id: runId, after: 0, upTo: 1 },
        { id: r2, after: 1 },
      ]);
      expect((await handle.result()).lastCommitted).toBe(4);

      expect((await getJson<LineageRecord>(stack.store, lineageKey(runId)))?.lineages).toEqual([
        { id: runId },
        { id: r1, from: { lineage: runId, iteration: 2 } },
        { id: r2, from: { lineage: runId, iteration: 1 } },
      ]);
      const kept = await loadManifests(stack.store, runId);
      expect(kept.map((m) => [m.iteration, m.runId])).toEqual([
        [1, runId],
        [2, r2],
        [3, r2],
        [4, r2],
      ]);
      const one = (await manifest(runId, 1))!;
      expect(await childInput(r2, 2)).toMatchObject({
        policies: one.policies,
        recipeStateKey: one.recipeStateKey,
      });
      const trainer = stack.trainer.stats();
      const restored = trainer.restores.filter((r) => r.policy === runId).map((r) => r.version);
      expect(restored).toEqual([2, 1]);
      const steps = trainer.steps.filter((s) => s.runId === r2).map((s) => [s.iteration, s.baseVersion]);
      expect(steps).toEqual([
        [2, 1],
        [3, 2],
        [4, 3],
      ]);

      // Started again under its id (its workflow gone, or more iterations wanted), the run goes on in its
      // current lineage, as lineage.json says.
      const again = await start(runId, { iterations: 5 });
      expect(await again.result()).toMatchObject({ lastCommitted: 5, versions: { [runId]: 5 } });
      expect((await progress(again)).lineage).toBe(r2);
      expect((await manifest(r2, 5))?.policies[runId]?.version).toBe(5);
      expect(await manifest(runId, 5)).toBeUndefined();
    });
  });

  test('the fork Update starts an independent run after a kept commit; bad requests are refused', async () => {
    const runId = uniqueId('fk');
    const forkId = uniqueId('fk-new');
    await stack.withWorkers(async () => {
      const handle = await start(runId, { iterations: 3 });
      await waitFor('2 commits', async () => (await progress(handle)).lastCommitted >= 2);
      await handle.executeUpdate(pauseUpdate);
      const refusal = (request: { id: string; iteration: number }) =>
        handle.executeUpdate(forkUpdate, { args: [request] }).then(
          () => 'accepted',
          (err: unknown) => String((err as { cause?: Error }).cause?.message),
        );
      expect(await refusal({ id: runId, iteration: 1 })).toMatch(/an id of its own/);
      expect(await refusal({ id: 'bad id!', iteration: 1 })).toMatch(/letters, digits/);
      expect(await refusal({ id: forkId, iteration: 9 })).toMatch(/iteration 9 is not committed/);

      const forked = await handle.executeUpdate(forkUpdate, { args: [{ id: forkId, iteration: 1 }] });
      expect(forked).toEqual({ workflowId: forkId, resumeFrom: { runId, iteration: 1 } });
      // A second fork to the same id is refused: the workflow exists.
      expect(await refusal({ id: forkId, iteration: 1 })).toMatch(/already exists/);
      const outcome = await stack.client.workflow.getHandle<typeof selfPlayRun>(forkId).result();
      expect(outcome.lastCommitted).toBe(3);
      const one = (await manifest(runId, 1))!;
      expect(await childInput(forkId, 2)).toMatchObject({
        runId: forkId,
        iteration: 2,
        policies: one.policies,
        recipeStateKey: one.recipeStateKey,
      });
      expect(await manifest(forkId, 1)).toBeUndefined();
      // The original is untouched: still paused at its own commits.
      expect(await progress(handle)).toMatchObject({ paused: true, lineage: runId });
      await handle.terminate('test done');
    });
  });

  test('a run without checkpoints refuses rollback', async () => {
    const runId = uniqueId('rbnock');
    await stack.withWorkers(async () => {
      const handle = await start(runId, { iterations: 2, training: { policy: runId, checkpoint: false } });
      await waitFor('iteration 1 in flight', async () => (await progress(handle)).iterationInFlight);
      await handle.executeUpdate(pauseUpdate);
      await expect(sendRollback(stack.client, runId, 1)).rejects.toThrow(
        'training.checkpoint is off: the trainer has no committed checkpoint to restore',
      );
      await handle.executeUpdate(resumeUpdate);
      expect((await handle.result()).lastCommitted).toBe(2);
    });
  });
});
