import os from 'node:os';
import path from 'node:path';
import { mkdtempSync } from 'node:fs';
import { Connection } from '@temporalio/client';
import { getJson, getJsonl } from '../../activities/clients/storage/codec';
import { batchKey, manifestKey, shardKey } from '../../activities/clients/storage/keys';
import { openStore, readObjectAtUri, writeObjectAtUri } from '../../activities/clients/storage';
import { seedOf } from '../../activities/lib/rng';
import { SPICE_CALLS } from '../../activities/clients/llm-protocol';
import type { SpiceSolved } from '../../activities/recipes/spice/records';
import type { TrainingRow } from '../../activities/clients/trainer-contract';
import type { Manifest } from '../../contracts/selfplay';
import { selfPlayRun } from '../../workflows';
import type { RunOutcome } from '../../workflows/selfPlayRun';
import { queueNames } from '../../workers/pools';
import { fingerprintOf } from '../support/scripted-llm/chat-request';
import { startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm/server';
import {
  startRecordingTrainer,
  type RecordingTrainer,
  type RecordingTrainerOptions,
} from '../support/recording-trainer/server';
import { spawnWorker } from '../support/worker-process';
import { scriptedWorkerEnv, startStack, uniqueId, type TestStack } from '../support/stack';
import { waitFor } from '../support/wait';
import { temporalClient } from '../support/temporal-client';

const G = 4;
/** The policy the scripted server serves as the kernel's sampler, so weight sync is real HTTP. */
const POLICY = 'pipelined';

/** Every iteration's manifest, in order. */
async function manifests(stack: Pick<TestStack, 'store'>, runId: string, n: number): Promise<Manifest[]> {
  const out: Manifest[] = [];
  for (let i = 1; i <= n; i++) out.push((await getJson<Manifest>(stack.store, manifestKey(runId, i)))!);
  return out;
}

/** Per iteration 1..n, the versions its batch's rows for `policy` say sampled them (`behaviourVersion`). */
async function rowVersions(
  stack: Pick<TestStack, 'store'>,
  runId: string,
  policy: string,
  n: number,
): Promise<unknown[][]> {
  const out: unknown[][] = [];
  for (let i = 1; i <= n; i++) {
    const rows = (await getJsonl<TrainingRow>(stack.store, batchKey(runId, i, policy))) ?? [];
    out.push([...new Set(rows.map((r) => r.behaviourVersion))]);
  }
  return out;
}

/**
 * Bounded staleness (`pipeline.maxStaleness`) on the real stack: iteration n+1 samples while iteration n's
 * training step runs, commits stay in order, and the manifests say which version sampled each batch.
 */
describe('SPICE with pipeline.maxStaleness 1', () => {
  let stack: TestStack;
  /** The run whose iteration-1 step is held until the scripted server has seen another iteration's requests. */
  let gated: string | undefined;
  let sampledDuringStep = 0;
  beforeAll(async () => {
    stack = await startStack({
      // One-step-off rows carry the log-probs they were sampled with (behaviour-logprobs.ts), as vLLM returns.
      llm: { samplerPolicy: POLICY, tokenIds: 'vllm' },
      beforeStep: async ({ runId, iteration }) => {
        if (runId !== gated || iteration !== 1) return;
        // Iteration 1's rollouts are all judged before its step: requests now are iteration 2's.
        const before = stack.llm.stats().requests;
        await waitFor('iteration 2 sampling while iteration 1 trains', () => {
          sampledDuringStep = stack.llm.stats().requests - before;
          return sampledDuringStep > 0;
        });
      },
    });
  });
  afterAll(() => stack.close());

  test('iteration n+1 samples while n trains; commits in order, at most one version behind', async () => {
    const runId = uniqueId('pipelined');
    gated = runId;
    const outcome = await stack.withWorkers(() =>
      stack.client.workflow.execute(selfPlayRun, {
        workflowId: runId,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [
          stack.runConfig({
            iterations: 4,
            continueAsNewEvery: 3,
            training: { policy: POLICY },
            weightSync: { engine: 'kernel' },
            pipeline: { maxStaleness: 1 },
          }),
        ],
      }),
    );
    expect(outcome.lastCommitted).toBe(4);
    expect(outcome.versions).toEqual({ [POLICY]: 4 });
    expect(sampledDuringStep).toBeGreaterThan(0);

    // One step per iteration, in order, each from the commit before it.
    const steps = stack.trainer.stats().steps.filter((s) => s.runId === runId);
    expect(steps.map((s) => [s.iteration, s.baseVersion])).toEqual([
      [1, 0],
      [2, 1],
      [3, 2],
      [4, 3],
    ]);
    for (const s of steps) expect(stack.trainer.stats().appliedByKey[s.key]).toBe(1);

    // Iteration 2 and 3 sampled one version behind; continue-as-new after 3 drained the pipeline, so 4
    // sampled iteration 3's commit.
    const pipeline = (await manifests(stack, runId, 4)).map((m) => m.metrics.pipeline);
    expect(
      pipeline.map((p) => [p?.behaviourVersions[POLICY], p?.baseVersions[POLICY], p?.staleness]),
    ).toEqual([
      [0, 0, 0],
      [0, 1, 1],
      [1, 2, 1],
      [3, 3, 0],
    ]);
    expect(pipeline.every((p) => p?.maxStaleness === 1)).toBe(true);
    // Every row carries the version that sampled it, which the kernel bounds against the step's base.
    expect(await rowVersions(stack, runId, POLICY, 4)).toEqual([[0], [0], [1], [3]]);
    // Weight sync happened, and never while a request was being answered.
    expect(stack.llm.stats().samplerLoads).toBeGreaterThan(0);
    expect(stack.llm.stats().loadsUnderRequests).toBe(0);
  });

  test('maxStaleness 0 (the default) samples every iteration with the previous commit', async () => {
    const runId = uniqueId('synchronous');
    await stack.withWorkers(() =>
      stack.client.workflow.execute(selfPlayRun, {
        workflowId: runId,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [stack.runConfig({ iterations: 2, training: { policy: runId } })],
      }),
    );
    const pipeline = (await manifests(stack, runId, 2)).map((m) => m.metrics.pipeline);
    expect(pipeline.map((p) => [p?.behaviourVersions[runId], p?.staleness, p?.maxStaleness])).toEqual([
      [0, 0, 0],
      [1, 0, 0],
    ]);
  });
});

/** A run of three iterations on its own queues and storage, its worker a process that the test SIGKILLs. */
interface CrashRig {
  runId: string;
  config: Record<string, unknown> & { seed: number; pools: ReturnType<typeof queueNames> };
  store: ReturnType<typeof openStore>;
  llm: ScriptedLlm;
  trainer: RecordingTrainer;
  env: ReturnType<typeof scriptedWorkerEnv>;
  connection: Connection;
  /** Set once a hook holds; the hook waits until `release`. */
  hold: Hold;
  /**
   * Runs to the end across a crash: starts the run on a worker process, SIGKILLs it once `ready`, releases the
   * hold, reads `between` while no worker runs, then starts a new worker; returns both.
   */
  crashOnce<T>(
    description: string,
    ready: () => Promise<boolean>,
    between: () => Promise<T>,
  ): Promise<{ outcome: RunOutcome; between: T }>;
  /** Iteration n's stored solve units (one per document, written as each finishes). */
  solveUnits(n: number): Promise<string[]>;
  close(): Promise<void>;
}

/** A hold a server hook waits in: `held` once it does, until `release`. */
interface Hold {
  held: boolean;
  wait(): Promise<void>;
  release(): void;
}

function newHold(): Hold {
  let release = (): void => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const hold: Hold = {
    held: false,
    wait: () => {
      hold.held = true;
      return released;
    },
    release: () => release(),
  };
  return hold;
}

async function crashRig(
  name: string,
  pipeline: Record<string, unknown>,
  hooksOf: (hold: Hold) => {
    beforeStep?: RecordingTrainerOptions['beforeStep'];
    beforeChat?: (call: string) => Promise<void>;
  },
): Promise<CrashRig> {
  const hold = newHold();
  const hooks = hooksOf(hold);
  const address = process.env.TEMPORAL_ADDRESS as string;
  const runId = uniqueId(name);
  const prefix = uniqueId('pq');
  const storageUri = `s3://${process.env.SELFPLAY_TEST_BUCKET as string}/${runId}`;
  const store = openStore(storageUri);
  // Reasoner calls are slow enough that the later iteration is still solving when the worker dies.
  const llm = await startScriptedLlm({
    capacity: G,
    calls: { [SPICE_CALLS.reason]: { latencyMs: 150 } },
    tokenIds: 'vllm',
    ...(hooks.beforeChat ? { beforeChat: hooks.beforeChat } : {}),
  });
  const trainer = await startRecordingTrainer({
    readBatch: readObjectAtUri,
    writeObject: writeObjectAtUri,
    stateFile: path.join(mkdtempSync(path.join(os.tmpdir(), 'trainer-')), 'state.json'),
    ...(hooks.beforeStep ? { beforeStep: hooks.beforeStep } : {}),
  });
  const env = scriptedWorkerEnv({
    address,
    queuePrefix: prefix,
    storageUri,
    llmUrl: llm.url,
    trainerUrl: trainer.url,
  });
  const config = {
    recipe: 'spice',
    seed: 7,
    iterations: 3,
    batchSize: 8,
    shardSize: 4,
    groupSize: G,
    corpus: { uri: 'test/fixtures/corpus/small.jsonl' },
    sampling: { maxTokens: 2048 },
    pools: queueNames(prefix),
    training: { policy: runId },
    inference: { requestTimeoutSeconds: 10, maxRetries: 3 },
    timeouts: { heartbeatSeconds: 3, activityMaxAttempts: 10 },
    pipeline,
  };
  const connection = await Connection.connect({ address });
  return {
    runId,
    config,
    store,
    llm,
    trainer,
    env,
    connection,
    hold,
    async crashOnce(description, ready, between) {
      let worker = spawnWorker(env);
      try {
        const handle = await temporalClient(connection).workflow.start(selfPlayRun, {
          workflowId: runId,
          taskQueue: config.pools.orchestrator,
          args: [config],
        });
        await waitFor(description, ready);
        await worker.stop('SIGKILL');
        hold.release();
        const observed = await between();
        worker = spawnWorker(env);
        return { outcome: await handle.result(), between: observed };
      } finally {
        hold.release();
        await worker.stop('SIGKILL');
      }
    },
    async solveUnits(n) {
      const solvePrefix = shardKey(runId, n, 'solve', 0).replace(/shard-0000\.jsonl\.gz$/, '');
      return (await store.list(solvePrefix)).filter((k) => k.includes('/unit-'));
    },
    close: () => Promise.all([connection.close(), llm.close(), trainer.close()]).then(() => undefined),
  };
}

/** The reasoner requests of stored solve units: each must have been asked exactly once, crash or not. */
async function expectAskedOnce(rig: CrashRig, iteration: number, keys: string[]): Promise<number> {
  const saved: SpiceSolved[] = [];
  for (const key of keys) saved.push((await getJson<SpiceSolved>(rig.store, key)) as SpiceSolved);
  const prints = saved.flatMap((r) =>
    r.answers.map((a) =>
      fingerprintOf(
        SPICE_CALLS.reason,
        a.messages,
        seedOf(rig.config.seed, iteration, 'solve', r.docIndex, a.trajectory),
        G,
      ),
    ),
  );
  expect(prints.length).toBeGreaterThan(0);
  for (const fp of prints) expect(rig.llm.stats().fingerprintCounts[fp]).toBe(1);
  return saved.length;
}

/** One step per iteration, in order, each from the commit before it, each applied once; commits in order. */
async function expectEachStepOnce(rig: CrashRig): Promise<void> {
  const steps = rig.trainer.stats().steps.filter((s) => s.runId === rig.runId);
  expect(steps.map((s) => [s.iteration, s.baseVersion])).toEqual([
    [1, 0],
    [2, 1],
    [3, 2],
  ]);
  for (const s of steps) expect(rig.trainer.stats().appliedByKey[s.key]).toBe(1);
  const committedAt = (await manifests(rig, rig.runId, 3)).map((m) => Date.parse(m.committedAt));
  expect([...committedAt].sort((a, b) => a - b)).toEqual(committedAt);
}

describe('a worker SIGKILLed with two iterations in flight', () => {
  test('both resume: stored units of the overlapping iteration are not recomputed, no step applies twice', async () => {
    // Iteration 1's step is held (and applied only after the worker died) while iteration 2 samples.
    const rig = await crashRig('pipelined-crash', { maxStaleness: 1 }, (hold) => ({
      beforeStep: ({ iteration }) => (iteration === 1 ? hold.wait() : Promise.resolve()),
    }));
    try {
      const { outcome, between: stored } = await rig.crashOnce(
        'iteration 2 solving while iteration 1 trains',
        async () => rig.hold.held && (await rig.solveUnits(2)).length >= 2,
        () => rig.solveUnits(2),
      );
      expect(outcome.lastCommitted).toBe(3);

      // Iteration 2's units stored before the crash were read back, never asked again.
      const saved = await expectAskedOnce(rig, 2, stored);
      const iteration2 = await getJson<Manifest>(rig.store, manifestKey(rig.runId, 2));
      expect(iteration2?.metrics.reusedUnits).toBeGreaterThanOrEqual(saved);
      expect(iteration2?.metrics.pipeline).toMatchObject({
        behaviourVersions: { [rig.runId]: 0 },
        staleness: 1,
      });
      // One step per iteration, in order, though iteration 1's was sent again by the new worker.
      await expectEachStepOnce(rig);
    } finally {
      await rig.close();
    }
    // Two worker processes and a heartbeat timeout: on a loaded 2-core machine this took up to 100 s.
  }, 300_000);

  test('streaming: both iterations still solving resume, reuse their stored units and commit in order', async () => {
    // Iteration 1's first reasoner request (no other iteration samples before its gates pass) is held until
    // the worker has died: iteration 1 cannot finish its rollouts, so iteration 2 samples only by streaming.
    const rig = await crashRig('streaming-crash', { maxStaleness: 1, streaming: true }, (hold) => ({
      beforeChat: (call) => (call === SPICE_CALLS.reason && !hold.held ? hold.wait() : Promise.resolve()),
    }));
    try {
      const { outcome, between } = await rig.crashOnce(
        'iteration 2 solving beside iteration 1',
        async () => {
          const [first, second] = await Promise.all([rig.solveUnits(1), rig.solveUnits(2)]);
          return rig.hold.held && first.length >= 1 && second.length >= 2;
        },
        async () => ({
          stored: await Promise.all([rig.solveUnits(1), rig.solveUnits(2)]),
          steps: rig.trainer.stats().steps.filter((s) => s.runId === rig.runId),
        }),
      );
      // Neither iteration had finished sampling when the worker died, so none had trained.
      expect(between.steps).toEqual([]);
      expect(outcome.lastCommitted).toBe(3);

      // Every unit either iteration stored before the crash was read back, never asked again.
      for (const [i, keys] of between.stored.entries()) await expectAskedOnce(rig, i + 1, keys);
      // Iteration 2 sampled beside iteration 1, with its version, and trained from iteration 1's commit.
      const pipeline = (await manifests(rig, rig.runId, 2)).map((m) => m.metrics.pipeline);
      expect(pipeline.map((p) => [p?.behaviourVersions[rig.runId], p?.baseVersions[rig.runId]])).toEqual([
        [0, 0],
        [0, 1],
      ]);
      // Each iteration's rows carry the version its manifest records; 3 started after 1 committed.
      const sampledBy = (await manifests(rig, rig.runId, 3)).map(
        (m) => m.metrics.pipeline?.behaviourVersions[rig.runId],
      );
      expect(sampledBy[2]).toBeGreaterThan(0);
      expect(await rowVersions(rig, rig.runId, rig.runId, 3)).toEqual(sampledBy.map((v) => [v]));
      await expectEachStepOnce(rig);
    } finally {
      await rig.close();
    }
  }, 300_000);
});
