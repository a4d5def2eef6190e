import path from 'node:path';
import os from 'node:os';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { Connection, type WorkflowHandle } from '@temporalio/client';
import { getJson, getJsonl } from '../../activities/clients/storage/codec';
import {
  batchKey,
  filterSummaryKey,
  latestKey,
  manifestKey,
  shardKey,
} from '../../activities/clients/storage/keys';
import { openStore, readObjectAtUri, writeObjectAtUri } from '../../activities/clients/storage';
import { recipeStateKey } from '../../activities/stages/recipe-state';
import { buildIndex } from '../../activities/retrieval/build';
import type { SspSolved, SspState } from '../../activities/recipes/ssp/records';
import type { Manifest } from '../../contracts/selfplay';
import { selfPlayRun } from '../../workflows';
import { progressQuery } from '../../workflows/messages';
import { queueNames } from '../../workers/pools';
import { SPICE_CALLS } from '../../activities/clients/llm-protocol';
import { startScriptedLlm, type ScriptedLlm, type ScriptedLlmOptions } from '../support/scripted-llm/server';
import {
  startRecordingTrainer,
  type RecordingTrainer,
  type RecordingTrainerOptions,
  type StateAction,
} from '../support/recording-trainer/server';
import type { ServerProcess } from '../support/process';
import { spawnWorker } from '../support/worker-process';
import { scriptedWorkerEnv, uniqueId, workflowBundle } from '../support/stack';
import { waitFor } from '../support/wait';
import { temporalClient } from '../support/temporal-client';

const ITERATIONS = 3;

/** A request held at a server until the test releases it: the first one `matches` accepts. */
function holdOnce<A extends unknown[]>(matches: (...args: A) => boolean) {
  let arrived = false;
  let release = (): void => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  return {
    hook: async (...args: A): Promise<void> => {
      if (arrived || !matches(...args)) return;
      arrived = true;
      await released;
    },
    arrived: () => arrived,
    release: () => release(),
  };
}

/** Holds the first trainer action of `kind` at `version` (a checkpoint, a publish) until released. */
const holdAction = (kind: StateAction, version: number) =>
  holdOnce((action: StateAction, _p: string, v: number) => action === kind && v === version);

/**
 * The seams where RL frameworks have hung or silently corrupted a run, each crossed by a SPICE run (an SSP
 * run where its task pool runs out) on the local stack: real Temporal and MinIO, a worker process SIGKILLed
 * at the seam, the scripted LLM answering weight sync as the kernel's sampler, the recording trainer (which
 * applies each step key once and checkpoints and publishes). Every run must finish, train each iteration exactly once on the version before it, commit
 * versions 1..N in order with the checkpoint and snapshot of that version, report the trainer's version, and
 * sample every iteration from the version it was synced to.
 */
describe('seams: a crash or restart at each one resumes consistently and trains nothing twice', () => {
  const bucket = process.env.SELFPLAY_TEST_BUCKET as string;
  const address = process.env.TEMPORAL_ADDRESS as string;
  let llm: ScriptedLlm;
  let trainer: RecordingTrainer;
  let workers: ServerProcess[] = [];
  let connection: Connection;
  let bundlePath: string;

  // Worker processes load the workflow bundle built once, as the image's workers do, so a restart is quick.
  beforeAll(async () => {
    bundlePath = path.join(mkdtempSync(path.join(os.tmpdir(), 'seams-')), 'workflow-bundle.js');
    writeFileSync(bundlePath, (await workflowBundle()).code);
  });
  afterEach(async () => {
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    workers = [];
    await Promise.all([llm.close(), trainer.close(), connection.close()]);
  });

  /** Servers, a worker process and the run's config; `hooks` hold a weight load or a trainer action. */
  const start = async (
    name: string,
    hooks: {
      beforeSamplerLoad?: (version: number) => Promise<void>;
      beforeAction?: (action: StateAction, policy: string, version: number) => Promise<void>;
      beforeChat?: (call: string) => Promise<void>;
      beforeStep?: RecordingTrainerOptions['beforeStep'];
    } = {},
    options: { overrides?: Record<string, unknown>; pools?: string[]; llm?: ScriptedLlmOptions } = {},
  ) => {
    const runId = uniqueId(name);
    const prefix = uniqueId('sq');
    const storageUri = `s3://${bucket}/${runId}`;
    llm = await startScriptedLlm({
      ...options.llm,
      capacity: 4,
      samplerPolicy: runId,
      ...(hooks.beforeSamplerLoad ? { beforeSamplerLoad: hooks.beforeSamplerLoad } : {}),
      ...(hooks.beforeChat ? { beforeChat: hooks.beforeChat } : {}),
    });
    trainer = await startRecordingTrainer({
      readBatch: readObjectAtUri,
      writeObject: writeObjectAtUri,
      stateFile: path.join(mkdtempSync(path.join(os.tmpdir(), 'seams-')), 'state.json'),
      ...(hooks.beforeAction ? { beforeAction: hooks.beforeAction } : {}),
      ...(hooks.beforeStep ? { beforeStep: hooks.beforeStep } : {}),
    });
    const env = {
      ...scriptedWorkerEnv({
        address,
        queuePrefix: prefix,
        storageUri,
        llmUrl: llm.url,
        trainerUrl: trainer.url,
      }),
      SELFPLAY_WORKFLOW_BUNDLE: bundlePath,
    };
    const config = {
      recipe: 'spice',
      seed: 5,
      iterations: ITERATIONS,
      batchSize: 4,
      shardSize: 2,
      groupSize: 4,
      corpus: { uri: 'test/fixtures/corpus/small.jsonl' },
      sampling: { maxTokens: 2048 },
      pools: queueNames(prefix),
      training: { policy: runId },
      weightSync: { engine: 'kernel', servers: [llm.url] },
      inference: { requestTimeoutSeconds: 10, maxRetries: 5 },
      timeouts: { heartbeatSeconds: 3, activityMaxAttempts: 10 },
      ...options.overrides,
    };
    connection = await Connection.connect({ address });
    const spawn = (pools = 'orchestrator,rollout,trainer'): ServerProcess => {
      const worker = spawnWorker(env, pools);
      workers.push(worker);
      return worker;
    };
    for (const pools of options.pools ?? ['orchestrator,rollout,trainer']) spawn(pools);
    const execute = () =>
      temporalClient(connection).workflow.start(selfPlayRun, {
        workflowId: runId,
        taskQueue: config.pools.orchestrator,
        args: [config],
      });
    const handle = await execute();
    const store = openStore(storageUri);
    const committed = async (): Promise<number> =>
      (await getJson<{ iteration: number }>(store, latestKey(runId)))?.iteration ?? 0;
    /** SIGKILLs the worker and starts another, as an operator's supervisor would. */
    const crashWorker = async (): Promise<void> => {
      await Promise.all(workers.map((w) => w.stop('SIGKILL')));
      spawn();
    };
    return { runId, store, handle, committed, crashWorker, spawn, execute };
  };

  /** What every seam must leave: N iterations, each trained once, committed and reported at its version. */
  const expectConsistent = async (
    runId: string,
    store: ReturnType<typeof openStore>,
    handle: WorkflowHandle<typeof selfPlayRun>,
    options: {
      /** What a server replaced during the run sampled, before the current one. */
      sampledEarlier?: number[];
      /** A version the servers answered from that the run refused to use (another run's weights). */
      refused?: number;
      /** Iterations whose step a restore to the version before undid, so it was applied a second time. */
      redone?: number[];
    } = {},
  ): Promise<void> => {
    const { sampledEarlier = [], refused, redone = [] } = options;
    // A failed iteration leaves the run waiting for an operator, not failed: report its cause, not a timeout.
    let done = false;
    const result = handle.result().finally(() => (done = true));
    const waits = async () => (await handle.query(progressQuery)).state === 'needsOperator';
    await waitFor(
      'the run finished or waiting for an operator',
      async () => done || (await waits()),
      540_000,
      500,
    );
    if (!done) {
      const { failure } = await handle.query(progressQuery);
      // Ended, so that no wait on its result outlives the test's connection.
      await handle.terminate('the seam test failed: the run waits for an operator');
      await result.catch(() => undefined);
      throw new Error(`iteration ${failure?.iteration} failed, the run waits: ${failure?.message}`);
    }
    const outcome = await result;
    expect(outcome).toMatchObject({ lastCommitted: ITERATIONS, versions: { [runId]: ITERATIONS } });
    expect((await handle.query(progressQuery)).versions).toEqual({ [runId]: ITERATIONS });
    // One step per iteration, each on the version the iteration before committed, each applied once (twice
    // where a restore undid the first application: that one is left out).
    const applied = trainer.stats().steps.filter((s) => s.runId === runId);
    const undone = redone.map((k) => applied.findIndex((s) => s.iteration === k));
    const steps = applied.filter((_, i) => !undone.includes(i));
    expect(steps.map((s) => [s.iteration, s.baseVersion])).toEqual([
      [1, 0],
      [2, 1],
      [3, 2],
    ]);
    for (const s of steps) {
      expect(trainer.stats().appliedByKey[s.key]).toBe(redone.includes(s.iteration) ? 2 : 1);
    }
    const trained = (await (await fetch(`${trainer.url}/v1/policies/${runId}`)).json()) as {
      policyVersion: number;
    };
    expect(trained.policyVersion).toBe(ITERATIONS);
    for (let iteration = 1; iteration <= ITERATIONS; iteration++) {
      const policy = (await getJson<Manifest>(store, manifestKey(runId, iteration)))?.policies[runId];
      expect(policy).toMatchObject({ version: iteration, snapshot: { version: iteration, policy: runId } });
      expect(policy?.checkpointUri).toContain(`v${String(iteration).padStart(6, '0')}`);
    }
    // Iteration k sampled only from version k-1, in order: never a version the run had not synced.
    const sampled = [...sampledEarlier, ...llm.stats().sampledVersions].filter((v) => v !== refused);
    expect(sampled.length).toBeGreaterThan(0);
    expect([...new Set(sampled)]).toEqual([0, 1, 2]);
    expect(sampled).toEqual([...sampled].sort((a, b) => a - b));
  };

  test('a worker SIGKILLed during weight sync: the sync is redone, nothing sampled or trained twice', async () => {
    const load = holdOnce((version: number) => version === 1);
    const run = await start('seam-sync', { beforeSamplerLoad: load.hook });
    await waitFor('the load of version 1 in flight', load.arrived, 240_000);
    const before = llm.stats();
    await run.crashWorker();
    // The held load never answers its caller; the restarted worker's sync must load version 1 itself.
    await waitFor('version 1 loaded after the crash', () => llm.stats().weightVersion === 1, 300_000);
    load.release();
    await expectConsistent(run.runId, run.store, run.handle);
    // Nothing sampled iteration 2 before the crash, and nothing after it sampled version 0.
    expect(before.sampledVersions.every((v) => v === 0)).toBe(true);
    expect(llm.stats().sampledVersions.slice(before.sampledVersions.length)).not.toContain(0);
    expect(llm.stats().duplicates).toEqual({});
  }, 600_000);

  test('a worker SIGKILLed during a checkpoint: the step is not applied again and the checkpoint is written', async () => {
    const checkpoint = holdAction('checkpoint', 2);
    const run = await start('seam-checkpoint', { beforeAction: checkpoint.hook });
    await waitFor('the checkpoint of version 2 in flight', checkpoint.arrived, 300_000);
    expect(await run.committed()).toBe(1);
    await run.crashWorker();
    checkpoint.release();
    await expectConsistent(run.runId, run.store, run.handle);
    // The retried update sent the step again and was answered with its first response, whose metrics the
    // manifest keeps (they were dropped as a skipped step's before).
    expect(trainer.stats().duplicates).toBeGreaterThanOrEqual(1);
    expect(llm.stats().duplicates).toEqual({});
    const manifest = await getJson<Manifest>(run.store, manifestKey(run.runId, 2));
    expect(Object.keys(manifest?.metrics.train[run.runId] ?? {})).toContain('loss');
  }, 600_000);

  test('a worker SIGKILLed between a training step and its commit: the run commits that step, once', async () => {
    const publish = holdAction('publish', 2);
    const run = await start('seam-commit', { beforeAction: publish.hook });
    await waitFor('the snapshot of version 2 in flight', publish.arrived, 300_000);
    // The seam: the trainer is at version 2, the run has committed and reports version 1.
    expect(await run.committed()).toBe(1);
    expect((await run.handle.query(progressQuery)).versions).toEqual({ [run.runId]: 1 });
    expect(trainer.stats().steps.filter((s) => s.runId === run.runId)).toHaveLength(2);
    await run.crashWorker();
    publish.release();
    await expectConsistent(run.runId, run.store, run.handle);
    expect(trainer.stats().duplicates).toBeGreaterThanOrEqual(1);
    expect(llm.stats().duplicates).toEqual({});
  }, 600_000);

  test('every shard of an iteration stored, no filter yet, the run started again: nothing resampled or retrained', async () => {
    const run = await start('seam-filter');
    const stored = async (stage: string) =>
      (await Promise.all([0, 1].map((s) => run.store.exists(shardKey(run.runId, 2, stage, s))))).every(
        Boolean,
      );
    await waitFor('iteration 2 judged', () => stored('judge'), 300_000);
    // The whole run is lost (its worker and its workflow history) with every shard of iteration 2 stored.
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    await run.handle.terminate('seam: the run is lost with every shard of iteration 2 stored');
    expect(await run.committed()).toBe(1);
    // The seam exactly: no filter output (a filter that finished before the kill is undone).
    await run.store.delete(filterSummaryKey(run.runId, 2));
    await run.store.delete(batchKey(run.runId, 2, run.runId));
    const sampledBefore = llm.stats().sampledVersions.length;
    run.spawn();
    const handle = await run.execute();
    await expectConsistent(run.runId, run.store, handle);
    // Iteration 2's shards were read back: no request was sent twice, nothing sampled again for it.
    expect(llm.stats().duplicates).toEqual({});
    expect(llm.stats().sampledVersions.slice(sampledBefore)).not.toContain(1);
    const manifest = await getJson<Manifest>(run.store, manifestKey(run.runId, 2));
    expect(manifest?.metrics.reusedUnits).toBeGreaterThan(0);
  }, 600_000);

  test('an inference server restarted with other weights mid-iteration: re-synced, never sampled as if in sync', async () => {
    // A Reasoner request of iteration 2 held in flight: the restart cuts it, and the client sends it again.
    const reason = holdOnce((call: string) => call === SPICE_CALLS.reason && llm.stats().weightVersion === 1);
    const run = await start('seam-restart', { beforeChat: reason.hook });
    await waitFor('a Reasoner request of iteration 2 in flight', reason.arrived, 300_000);
    const before = llm.stats();
    await llm.close();
    reason.release();
    // The restarted server takes no load until it has answered from version 7 (or 30 s have passed): a shard
    // that starts meanwhile would otherwise sync it back to version 1 first, and no request would ever meet
    // the weights this test is about. (Until `llm` names the restarted server, the check reads the closed one.)
    const answeredFromSeven = (): boolean =>
      Object.values(llm.stats().answeredVersions).some((versions) => versions.includes(7));
    llm = await startScriptedLlm({
      port: llm.port,
      capacity: 4,
      samplerPolicy: run.runId,
      weightVersion: 7,
      beforeSamplerLoad: () =>
        waitFor('an answer from version 7', answeredFromSeven, 30_000, 20).catch(() => undefined),
    });
    await expectConsistent(run.runId, run.store, run.handle, {
      sampledEarlier: before.sampledVersions,
      refused: 7,
    });
    // Requests the restarted server answered from version 7 were refused: each was asked again, after the
    // shard's retry brought the server back to version 1, and answered from it; none was kept from version 7.
    const answers = Object.values(llm.stats().answeredVersions);
    const atSeven = answers.filter((versions) => versions.includes(7));
    expect(atSeven.length).toBeGreaterThan(0);
    for (const versions of atSeven) expect(versions.at(-1)).toBe(1);
    // Version 7 answered only until the first reload; then version 1 for the rest of iteration 2, then 2.
    const sampled = llm.stats().sampledVersions;
    expect(sampled.lastIndexOf(7)).toBeLessThan(sampled.indexOf(1));
    expect(llm.stats().samplerLoads).toBeGreaterThanOrEqual(2);
    expect(llm.stats().weightVersion).toBe(2);
  }, 600_000);

  /** SSP's replay pool, emptied every 2 iterations: iteration 2 draws from iteration 1's pool, 3 from none. */
  let sspIndex: Promise<string> | undefined;
  const startSsp = async (name: string, hooks: Parameters<typeof start>[1]) => {
    sspIndex ??= (async () => {
      const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'seams-')), 'bm25');
      await buildIndex({ corpus: 'test/fixtures/ssp/corpus.jsonl', out, kind: 'bm25' });
      return out;
    })();
    const index = await sspIndex;
    const run = await start(name, hooks, {
      llm: { passRate: { min: 0.2, max: 0.8 }, invalidTaskRate: 0.3 },
      overrides: {
        recipe: 'ssp',
        seed: 11,
        batchSize: 10,
        shardSize: 5,
        groupSize: 5,
        retrieval: { index },
        ssp: { replay: { resetEvery: 2 } },
      },
    });
    const pool = async (k: number) =>
      (await getJson<SspState>(run.store, recipeStateKey(run.runId, k)))?.pool;
    /** The pools iterations 1..3 left: the one that iteration k + 1 draws from. */
    const pools = async () => ({ 1: await pool(1), 2: await pool(2), 3: await pool(3) });
    const solved = async (k: number) =>
      (
        await Promise.all(
          [0, 1].map((s) => getJsonl<SspSolved>(run.store, shardKey(run.runId, k, 'solve', s))),
        )
      ).flatMap((r) => r ?? []);
    /** The run lost (its worker and its workflow history) and started again under its id. */
    const lose = async (reason: string) => {
      await Promise.all(workers.map((w) => w.stop('SIGKILL')));
      await run.handle.terminate(reason);
    };
    return { ...run, pools, solved, lose };
  };

  /** The reset is committed (iteration 2 left an empty pool), and iteration 3 sampled with nothing to draw from. */
  const expectPoolSeam = async (run: Awaited<ReturnType<typeof startSsp>>) => {
    expect(await run.committed()).toBe(2);
    const pools = await run.pools();
    expect(pools[1]?.length).toBeGreaterThan(0);
    expect(pools[2]).toEqual([]);
    // Iteration 2's invalid slots drew from iteration 1's pool; iteration 3's, with the pool empty, from none.
    const questions = new Set(pools[1]?.map((p) => p.question));
    const replayed = (await run.solved(2)).filter((v) => v.source === 'replay');
    expect(replayed.length).toBeGreaterThan(0);
    for (const v of replayed) expect(questions.has(v.problem?.question as string)).toBe(true);
    const third = await run.solved(3);
    expect(third.some((v) => v.source === 'replay')).toBe(false);
    expect(third.some((v) => v.source === 'none')).toBe(true);
    // Its filter refilled the pool with its own problems only: nothing carried across the reset.
    expect(pools[3]?.length).toBeGreaterThan(0);
    expect(pools[3]?.every((p) => p.iteration === 3)).toBe(true);
    return pools;
  };

  test('the run lost after sampling from a replay pool a reset emptied, before its filter: refilled as uninterrupted', async () => {
    const step = holdOnce((s: { iteration: number }) => s.iteration === 3);
    const run = await startSsp('seam-pool', { beforeStep: step.hook });
    await waitFor('the step of iteration 3 in flight', step.arrived, 300_000);
    const uninterrupted = await expectPoolSeam(run);
    await run.lose('seam: the run is lost as iteration 3 trains on an emptied pool');
    // The seam exactly: iteration 3 sampled, not filtered (the lost run's filter outputs are undone), so the
    // restarted run refills the pool from the state it reads back from iteration 2's commit.
    for (const key of [
      filterSummaryKey(run.runId, 3),
      batchKey(run.runId, 3, run.runId),
      recipeStateKey(run.runId, 3),
    ])
      await run.store.delete(key);
    run.spawn();
    const handle = await run.execute();
    // The lost step lands only once the restarted run has sent the same step: it is answered, not applied.
    const sent = trainer.stats().requests;
    const resent = () => trainer.stats().requests > sent;
    await waitFor('the restarted run sending the step of iteration 3', resent, 300_000);
    step.release();
    await expectConsistent(run.runId, run.store, handle);
    expect(trainer.stats().duplicates).toBe(1);
    // Iteration 3's samples were read back, and the pool it left is the one the lost run had computed.
    expect(llm.stats().duplicates).toEqual({});
    const manifest = await getJson<Manifest>(run.store, manifestKey(run.runId, 3));
    expect(manifest?.metrics.reusedUnits).toBeGreaterThan(0);
    expect(manifest?.recipeStateKey).toBe(recipeStateKey(run.runId, 3));
    expect(await run.pools()).toEqual(uninterrupted);
  }, 600_000);

  test('the run lost between a step on a refilled replay pool and its commit: restored, the step applied anew', async () => {
    const checkpoint = holdAction('checkpoint', 3);
    const run = await startSsp('seam-pool-step', { beforeAction: checkpoint.hook });
    await waitFor('the checkpoint of version 3 in flight', checkpoint.arrived, 300_000);
    // The seam: the trainer took iteration 3's step (version 3), the run committed version 2.
    const uninterrupted = await expectPoolSeam(run);
    await run.lose('seam: the run is lost between the step of iteration 3 and its commit');
    checkpoint.release();
    run.spawn();
    const handle = await run.execute();
    // The restarted run found the trainer ahead of its commit and restored version 2, which forgot the step
    // (as the kernel's checkpoint keeps the keys it applied): the step was applied again, on version 2.
    await expectConsistent(run.runId, run.store, handle, { redone: [3] });
    expect(
      trainer
        .stats()
        .restores.filter((r) => r.policy === run.runId)
        .map((r) => r.version),
    ).toEqual([2]);
    expect(llm.stats().duplicates).toEqual({});
    expect(await run.pools()).toEqual(uninterrupted);
  }, 600_000);
});
