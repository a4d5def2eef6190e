import { Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { getJson } from '../../activities/clients/storage/codec';
import { manifestKey } from '../../activities/clients/storage/keys';
import type { Manifest } from '../../contracts/selfplay';
import { selfPlayRun } from '../../workflows';
import { iterationChildId, progressQuery } from '../../workflows/messages';
import { queueNames } from '../../workers/pools';
import { startMinio, type MinioServer } from '../support/minio-server';
import { s3ObjectIo } from '../support/s3-io';
import { startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm/server';
import { startRecordingTrainer, type RecordingTrainer } from '../support/recording-trainer/server';
import { spawnWorker } from '../support/worker-process';
import type { ServerProcess } from '../support/process';
import { uniqueId } from '../support/stack';
import { waitFor } from '../support/wait';
import { temporalClient } from '../support/temporal-client';

/** The activities of the orchestrator pool in a SPICE iteration (its judge runs there too). */
const ORCHESTRATOR = new Set(['plan', 'gate', 'judge', 'filter', 'commit']);

/** The attempts an activity got before this release: a longer outage failed the run. */
const OLD_ATTEMPT_BUDGET = 10;

/**
 * Storage down for longer than the old retry budget: a MinIO of this test's own (the shared one serves other
 * test files) stopped after a commit, held down until an activity of the next iteration has failed more
 * attempts than the old budget allowed, then started again. The retry backoff is scaled down by the run
 * config (a second at most between attempts, instead of a minute), so the budget is spent in seconds. And an
 * orchestrator worker SIGKILLed while one of its activities runs: the lost attempt is retried once its
 * heartbeats stop, not after the attempt's limit (orchestrator activities had no heartbeat timeout before).
 */
describe('a storage outage', () => {
  let minio: MinioServer;
  let llm: ScriptedLlm;
  let trainer: RecordingTrainer;
  beforeAll(async () => {
    minio = await startMinio({
      credentials: {
        accessKey: process.env.AWS_ACCESS_KEY_ID as string,
        secretKey: process.env.AWS_SECRET_ACCESS_KEY as string,
      },
    });
    const io = s3ObjectIo(minio.endpoint);
    llm = await startScriptedLlm({});
    trainer = await startRecordingTrainer({ readBatch: io.read, writeObject: io.write });
  });
  afterAll(async () => {
    await Promise.all([llm.close(), trainer.close(), minio.stop()]);
  });

  /** Pending activities of a workflow: type, attempt and whether an attempt is running now. */
  const pendingOf = async (handle: WorkflowHandle) =>
    ((await handle.describe()).raw.pendingActivities ?? []).map((a) => ({
      id: a.activityId ?? '',
      type: a.activityType?.name ?? '',
      attempt: a.attempt ?? 0,
      running: a.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
    }));

  /**
   * Stops storage while an orchestrator activity of `child` is pending, so that its attempts keep starting and
   * failing on the orchestrator pool. Stopped during a rollout stage, the iteration would never reach one: its
   * shards would fail and retry on the rollout pool until storage came back. An orchestrator activity that
   * finishes just before the stop starts the wait over.
   */
  const stopStorageInOrchestratorStage = async (child: WorkflowHandle): Promise<void> => {
    for (;;) {
      await waitFor(
        'an orchestrator activity of iteration 2 running',
        async () => (await pendingOf(child)).some((a) => a.running && ORCHESTRATOR.has(a.type)),
        120_000,
        20,
      );
      await minio.stop();
      if ((await pendingOf(child)).some((a) => ORCHESTRATOR.has(a.type))) return;
      await minio.restart();
    }
  };

  /** A SPICE run of this test's stack on task queues `{prefix}-*`, its workers separate processes. */
  const stackRun = async (name: string) => {
    const address = process.env.TEMPORAL_ADDRESS as string;
    const runId = uniqueId(name);
    const prefix = uniqueId('oq');
    const storageUri = `s3://${minio.bucket}/${runId}`;
    const workers: ServerProcess[] = [];
    const spawn = (pools: string): ServerProcess => {
      const worker = spawnWorker(
        {
          TEMPORAL_ADDRESS: address,
          SELFPLAY_QUEUE_PREFIX: prefix,
          SELFPLAY_STORAGE: storageUri,
          S3_ENDPOINT: minio.endpoint,
          SELFPLAY_INFERENCE_URL: llm.url,
          SELFPLAY_INFERENCE_MODEL: 'scripted-policy',
          SELFPLAY_TRAINER_URL: trainer.url,
        },
        pools,
      );
      workers.push(worker);
      return worker;
    };
    const connection = await Connection.connect({ address });
    const client = temporalClient(connection);
    const start = () =>
      client.workflow.start(selfPlayRun, {
        workflowId: runId,
        taskQueue: queueNames(prefix).orchestrator,
        args: [
          {
            recipe: 'spice',
            iterations: 3,
            batchSize: 8,
            shardSize: 4,
            groupSize: 4,
            sampling: { maxTokens: 2048 },
            pools: queueNames(prefix),
            training: { policy: runId },
            inference: { requestTimeoutSeconds: 10, maxRetries: 2 },
            // No attempt cap: the default. The backoff is scaled down from a minute to a second; an
            // orchestrator attempt may take 10 minutes, far longer than this test may.
            timeouts: {
              heartbeatSeconds: 5,
              retryInitialSeconds: 0.2,
              retryMaxSeconds: 1,
              orchestratorMinutes: 10,
            },
          },
        ],
      });
    /** Waits until the run has committed iteration 1 and runs iteration 2; its child's handle. */
    const inIteration2 = async (handle: WorkflowHandle<typeof selfPlayRun>): Promise<WorkflowHandle> => {
      await waitFor(
        'iteration 1 committed, iteration 2 started',
        async () => {
          const progress = await handle.query(progressQuery);
          return progress.lastCommitted >= 1 && progress.iterationInFlight;
        },
        120_000,
        200,
      );
      return client.workflow.getHandle(
        iterationChildId(runId, (await handle.query(progressQuery)).iteration),
      );
    };
    /** Every iteration committed, one training step each, applied once. */
    const expectCompleted = async (handle: WorkflowHandle<typeof selfPlayRun>): Promise<void> => {
      expect((await handle.result()).lastCommitted).toBe(3);
      const store = s3ObjectIo(minio.endpoint).store(storageUri);
      for (const n of [1, 2, 3])
        expect((await getJson<Manifest>(store, manifestKey(runId, n)))?.iteration).toBe(n);
      const steps = trainer.stats().steps.filter((s) => s.runId === runId);
      expect(steps.map((s) => s.iteration)).toEqual([1, 2, 3]);
      for (const s of steps) expect(trainer.stats().appliedByKey[s.key]).toBe(1);
    };
    const close = async (): Promise<void> => {
      await Promise.all(workers.map((w) => w.stop('SIGKILL')));
      await connection.close();
    };
    return { spawn, start, inIteration2, expectCompleted, close };
  };

  test('held down past the old budget: the run waits and completes once storage is back, nothing applied twice', async () => {
    const run = await stackRun('outage');
    try {
      run.spawn('orchestrator,rollout,trainer');
      const handle = await run.start();
      const child = await run.inIteration2(handle);
      await minio.stop();
      await waitFor(
        `an activity past ${OLD_ATTEMPT_BUDGET} attempts`,
        async () => Math.max(0, ...(await pendingOf(child)).map((a) => a.attempt)) > OLD_ATTEMPT_BUDGET,
        120_000,
        500,
      );
      // Past the point where the run used to fail, it is still going, waiting on storage.
      expect((await handle.describe()).status.name).toBe('RUNNING');
      expect((await handle.query(progressQuery)).state).toBe('running');

      await minio.restart();
      await run.expectCompleted(handle);
    } finally {
      await run.close();
    }
  });

  test('an orchestrator worker killed in the middle of an activity: the attempt is retried after the heartbeat timeout, not the attempt limit', async () => {
    const run = await stackRun('orch-kill');
    try {
      let orchestrator = run.spawn('orchestrator');
      run.spawn('rollout,trainer');
      const handle = await run.start();
      const child = await run.inIteration2(handle);
      await stopStorageInOrchestratorStage(child);
      // With storage down, orchestrator attempts keep starting (and failing): kill the worker while one runs.
      let lost: { id: string; attempt: number } | undefined;
      let killedAt = 0;
      while (!lost) {
        await waitFor(
          'an orchestrator activity running',
          async () => (await pendingOf(child)).some((a) => a.running && ORCHESTRATOR.has(a.type)),
          60_000,
          20,
        );
        const running = (await pendingOf(child)).filter((a) => a.running && ORCHESTRATOR.has(a.type));
        await orchestrator.stop('SIGKILL');
        killedAt = Date.now();
        // An attempt still running after the kill can only be the dead worker's: nobody will finish it.
        const after = await pendingOf(child);
        lost = running.find((r) => after.some((a) => a.id === r.id && a.running && a.attempt === r.attempt));
        orchestrator = run.spawn('orchestrator');
      }
      const attempt = lost.attempt;
      const id = lost.id;
      await minio.restart();
      await waitFor(
        'the lost attempt to be given up and retried',
        async () => !(await pendingOf(child)).some((a) => a.id === id && a.attempt === attempt),
        120_000,
        200,
      );
      const retriedAfterS = (Date.now() - killedAt) / 1000;
      // Heartbeat timeout 5 s (then the backoff): nowhere near the 10-minute attempt limit.
      expect(retriedAfterS).toBeLessThan(60);
      await run.expectCompleted(handle);
    } finally {
      await run.close();
    }
  });
});
