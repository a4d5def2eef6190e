import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { getJson } from '../../activities/clients/storage/codec';
import { manifestKey } from '../../activities/clients/storage/keys';
import type { Manifest } from '../../workflows/contracts';
import { selfPlayRun } from '../../workflows';
import { iterationChildId, progressQuery } from '../../workflows/messages';
import { queueNames } from '../../workers/pools';
import { startMinio, type MinioServer } from '../support/minio-server';
import { s3ObjectIo } from '../support/s3-io';
import { startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm/server';
import { startRecordingTrainer, type RecordingTrainer } from '../support/recording-trainer/server';
import { spawnWorker } from '../support/worker-process';
import { uniqueId } from '../support/stack';
import { waitFor } from '../support/wait';

/** The attempts an activity got before this release: a longer outage failed the run. */
const OLD_ATTEMPT_BUDGET = 10;

/**
 * Storage down for longer than the old retry budget: a MinIO of this test's own (the shared one serves other
 * test files) stopped after a commit, held down until an activity of the next iteration has failed more
 * attempts than the old budget allowed, then started again. The retry backoff is scaled down by the run
 * config (a second at most between attempts, instead of a minute), so the budget is spent in seconds.
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

  /** The most attempts any pending activity of the iteration child has reached. */
  const mostAttempts = async (handle: WorkflowHandle): Promise<number> => {
    const pending = (await handle.describe()).raw.pendingActivities ?? [];
    return Math.max(0, ...pending.map((a) => a.attempt ?? 0));
  };

  test('held down past the old budget: the run waits and completes once storage is back, nothing applied twice', async () => {
    const address = process.env.TEMPORAL_ADDRESS as string;
    const runId = uniqueId('outage');
    const prefix = uniqueId('oq');
    const storageUri = `s3://${minio.bucket}/${runId}`;
    const store = s3ObjectIo(minio.endpoint).store(storageUri);
    const worker = spawnWorker({
      TEMPORAL_ADDRESS: address,
      SELFPLAY_QUEUE_PREFIX: prefix,
      SELFPLAY_STORAGE: storageUri,
      S3_ENDPOINT: minio.endpoint,
      SELFPLAY_INFERENCE_URL: llm.url,
      SELFPLAY_INFERENCE_MODEL: 'scripted-policy',
      SELFPLAY_TRAINER_URL: trainer.url,
    });
    const connection = await Connection.connect({ address });
    try {
      const client = new Client({ connection });
      const handle = await client.workflow.start(selfPlayRun, {
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
            // No attempt cap: the default. The backoff is scaled down from a minute to a second.
            timeouts: { heartbeatSeconds: 5, retryInitialSeconds: 0.2, retryMaxSeconds: 1 },
          },
        ],
      });
      // Stopped once the run has recorded iteration 1 and started iteration 2.
      await waitFor(
        'iteration 1 committed, iteration 2 started',
        async () => {
          const progress = await handle.query(progressQuery);
          return progress.lastCommitted >= 1 && progress.iterationInFlight;
        },
        120_000,
        200,
      );
      await minio.stop();
      const child = client.workflow.getHandle(
        iterationChildId(runId, (await handle.query(progressQuery)).iteration),
      );
      await waitFor(
        `an activity past ${OLD_ATTEMPT_BUDGET} attempts`,
        async () => (await mostAttempts(child)) > OLD_ATTEMPT_BUDGET,
        120_000,
        500,
      );
      // Past the point where the run used to fail, it is still going, waiting on storage.
      expect((await handle.describe()).status.name).toBe('RUNNING');
      expect((await handle.query(progressQuery)).state).toBe('running');

      await minio.restart();
      const outcome = await handle.result();
      expect(outcome.lastCommitted).toBe(3);
      for (const n of [1, 2, 3])
        expect((await getJson<Manifest>(store, manifestKey(runId, n)))?.iteration).toBe(n);
      // One training step per iteration, each applied once.
      const steps = trainer.stats().steps.filter((s) => s.runId === runId);
      expect(steps.map((s) => s.iteration)).toEqual([1, 2, 3]);
      for (const s of steps) expect(trainer.stats().appliedByKey[s.key]).toBe(1);
    } finally {
      await worker.stop('SIGKILL');
      await connection.close();
    }
  });
});
