import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { openStore, readObjectAtUri, writeObjectAtUri } from '../../activities/clients/storage';
import { SPICE_CALLS } from '../../activities/clients/llm-protocol';
import { shardKey } from '../../activities/clients/storage/keys';
import { selfPlayRun } from '../../workflows';
import { iterationChildId } from '../../workflows/messages';
import { POOLS, queueNames, type Pool } from '../../workers/pools';
import { freePort } from '../support/free-port';
import { ServerProcess } from '../support/process';
import { startRecordingTrainer, type RecordingTrainer } from '../support/recording-trainer/server';
import { startRoundRobin, type RoundRobin } from '../support/round-robin';
import type { ScriptedStats } from '../support/scripted-llm/server';
import { uniqueId, workflowBundle } from '../support/stack';
import { waitFor } from '../support/wait';
import { spawnWorker } from '../support/worker-process';
import { temporalClient } from '../support/temporal-client';

const ROOT = path.resolve(__dirname, '../..');
const SHARDS = 4;

/** One inference replica: the scripted server as its own process, answering weight sync as the kernel sampler. */
function spawnReplica(port: number, policy: string): ServerProcess {
  const calls = { [SPICE_CALLS.reason]: { latencyMs: 250 } };
  return new ServerProcess(`inference replica :${port}`, process.execPath, [
    '--import',
    'tsx',
    path.join(ROOT, 'test/support/scripted-llm/main.ts'),
    ...['--port', String(port), '--capacity', '8', '--sampler-policy', policy],
    ...['--config', JSON.stringify({ calls })],
  ]);
}

async function replicaStats(port: number): Promise<ScriptedStats> {
  return (await (await fetch(`http://127.0.0.1:${port}/admin/stats`)).json()) as ScriptedStats;
}

async function startReplica(port: number, policy: string): Promise<ServerProcess> {
  const replica = spawnReplica(port, policy);
  await replica.waitUntilReady(async () => (await fetch(`http://127.0.0.1:${port}/v1/models`)).ok, 60_000);
  return replica;
}

/**
 * A cluster on one machine: two worker processes per pool, two inference replicas behind a round-robin Service
 * and listed in `weightSync.servers`, real Temporal and MinIO. In the middle of iteration 2 one process of each
 * kind is SIGKILLed (and the replica restarted later, as Kubernetes restarts a pod): the run finishes on the
 * survivors, every iteration trains exactly once, and every replica ends on the last version. Scaling out is
 * only adding processes: nothing in the run names a process.
 */
describe('a cluster on one machine', () => {
  let trainer: RecordingTrainer;
  let proxy: RoundRobin | undefined;
  const processes: ServerProcess[] = [];

  beforeEach(async () => {
    trainer = await startRecordingTrainer({ readBatch: readObjectAtUri, writeObject: writeObjectAtUri });
  });
  afterEach(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await Promise.all([trainer.close(), proxy?.close()]);
  });

  test('two workers per pool and two replicas, one of each killed mid-iteration', async () => {
    const address = process.env.TEMPORAL_ADDRESS as string;
    const runId = uniqueId('cluster');
    const policy = runId;
    const prefix = uniqueId('cl');
    const storageUri = `s3://${process.env.SELFPLAY_TEST_BUCKET as string}/${runId}`;
    const store = openStore(storageUri);
    const ports = [await freePort(), await freePort()] as const;
    const replicas = await Promise.all(ports.map((port) => startReplica(port, policy)));
    processes.push(...replicas);
    const servers = ports.map((port) => `http://127.0.0.1:${port}/v1`);
    proxy = await startRoundRobin(servers);

    // Orchestrators load the workflow bundle built once, as the image's workers do.
    const bundle = path.join(mkdtempSync(path.join(os.tmpdir(), 'cluster-')), 'workflow-bundle.js');
    writeFileSync(bundle, (await workflowBundle()).code);
    const env = {
      TEMPORAL_ADDRESS: address,
      SELFPLAY_QUEUE_PREFIX: prefix,
      SELFPLAY_STORAGE: storageUri,
      SELFPLAY_INFERENCE_URL: proxy.url,
      SELFPLAY_INFERENCE_MODEL: 'scripted-policy',
      SELFPLAY_TRAINER_URL: trainer.url,
      // The replicas the weight sync calls one by one take the kernel token (docs/security.md).
      SELFPLAY_CREDENTIAL_BINDINGS: `SELFPLAY_KERNEL_TOKEN=${ports.map((port) => `http://127.0.0.1:${port}`).join(',')}`,
      SELFPLAY_WORKFLOW_BUNDLE: bundle,
    };
    const workers = new Map<Pool, ServerProcess[]>(
      POOLS.map((pool) => [pool, [spawnWorker(env, pool), spawnWorker(env, pool)]]),
    );
    processes.push(...[...workers.values()].flat());

    const config = {
      recipe: 'spice',
      seed: 11,
      iterations: 3,
      batchSize: 2 * SHARDS,
      shardSize: 2,
      groupSize: 4,
      corpus: { uri: 'test/fixtures/corpus/small.jsonl' },
      pools: queueNames(prefix),
      training: { policy },
      weightSync: { engine: 'kernel', servers },
      inference: { requestTimeoutSeconds: 10, maxRetries: 5 },
      timeouts: { heartbeatSeconds: 3, activityMaxAttempts: 10 },
    };
    const connection = await Connection.connect({ address });
    const client = temporalClient(connection);
    try {
      const handle = await client.workflow.start(selfPlayRun, {
        workflowId: runId,
        taskQueue: config.pools.orchestrator,
        args: [config],
      });

      // Mid-iteration 2: every shard gated (no orchestrator activity in flight, so none waits out a deadline)
      // and solving, none solved yet.
      const stored = (stage: string) =>
        Promise.all(Array.from({ length: SHARDS }, (_, s) => store.exists(shardKey(runId, 2, stage, s))));
      await waitFor(
        'iteration 2 gated and solving',
        async () => (await stored('gate')).every(Boolean) && !(await stored('solve')).some(Boolean),
        180_000,
        20,
      );
      const servedBefore = proxy.served();
      const loadsBefore = await replicaStats(ports[0]);
      await Promise.all([
        ...POOLS.map((pool) => (workers.get(pool) as ServerProcess[])[0]?.stop('SIGKILL')),
        replicas[0]?.stop('SIGKILL'),
      ]);
      // The killed replica comes back at once, as its StatefulSet would bring it back: every listed server is
      // brought to the run's version before a shard samples, and that sync retries a down server (transient)
      // until it answers. The surviving workers finish iteration 2.
      processes.push(await startReplica(ports[0], policy));
      await waitFor('iteration 2 judged', async () => (await stored('judge')).every(Boolean), 180_000);

      const outcome = await handle.result();
      expect(outcome.lastCommitted).toBe(3);
      // Both replicas served before the kill; the sync had brought replica 0 to version 1 for iteration 2.
      for (const origin of Object.keys(servedBefore)) expect(servedBefore[origin]).toBeGreaterThan(0);
      expect(loadsBefore.weightVersion).toBe(1);
      // Every iteration trained exactly once, whichever trainer worker sent it.
      const steps = trainer.stats().steps.filter((s) => s.runId === runId);
      expect(steps.map((s) => s.iteration)).toEqual([1, 2, 3]);
      for (const s of steps) expect(trainer.stats().appliedByKey[s.key]).toBe(1);
      // Iteration 3 began by bringing every listed replica, the restarted one included, to version 2.
      for (const port of ports) expect((await replicaStats(port)).weightVersion).toBe(2);
      // Both workers of the orchestrator and rollout pools took activities before the kill.
      const identities = async (iteration: number) => {
        const history = await client.workflow.getHandle(iterationChildId(runId, iteration)).fetchHistory();
        return (history.events ?? []).flatMap((e) => e.activityTaskStartedEventAttributes?.identity ?? []);
      };
      const early = [...(await identities(1)), ...(await identities(2))];
      for (const pool of ['orchestrator', 'rollout']) {
        expect(new Set(early.filter((id) => id.endsWith(`/${pool}`))).size).toBe(2);
      }
      // After the kill, only the survivors: one process per pool.
      const late = await identities(3);
      for (const pool of POOLS) expect(new Set(late.filter((id) => id.endsWith(`/${pool}`))).size).toBe(1);
    } finally {
      await connection.close();
    }
  }, 600_000);
});
