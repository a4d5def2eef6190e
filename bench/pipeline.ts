import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { InferencePool } from '../activities/clients/inference';
import { openStore, readObjectAtUri, writeObjectAtUri } from '../activities/clients/storage';
import { getJson } from '../activities/clients/storage/codec';
import { manifestKey } from '../activities/clients/storage/keys';
import { RECIPES } from '../activities/recipes';
import type { Manifest } from '../contracts/selfplay';
import { selfPlayRun } from '../workflows';
import { createPoolWorkers, POOLS, queueNames } from '../workers/pools';
import { startScriptedLlm } from '../test/support/scripted-llm/server';
import { startRecordingTrainer } from '../test/support/recording-trainer/server';
import { startTemporalDevServer } from '../test/support/temporal-server';
import { workflowBundle } from '../test/support/stack';

/**
 * One SPICE iteration at the paper's B=128, G=8 against the scripted server with a fixed capacity (the most
 * completions it works on at once) and latency per completion. The server can deliver at most
 * capacity/latency completions per second; utilization is what the pipeline achieved over the whole
 * iteration (propose to commit, orchestration included) divided by that. Stages flowing per shard keep it high.
 */
const CAPACITY = Number(process.env.BENCH_CAPACITY ?? 128);
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 500);

export async function main(): Promise<void> {
  const temporal = await startTemporalDevServer();
  const llm = await startScriptedLlm({ capacity: CAPACITY, latencyMs: LATENCY_MS });
  const trainer = await startRecordingTrainer({ readBatch: readObjectAtUri, writeObject: writeObjectAtUri });
  const storageUri = mkdtempSync(path.join(os.tmpdir(), 'bench-store-'));
  const store = openStore(storageUri);
  const queues = queueNames('bench');
  const native = await NativeConnection.connect({ address: temporal.address });
  const workers = await createPoolWorkers({
    connection: native,
    namespace: 'default',
    pools: POOLS,
    queues,
    deps: {
      store,
      inference: new InferencePool(),
      recipes: RECIPES,
      env: {
        storageUri,
        inferenceUrl: llm.url,
        inferenceModel: 'scripted-policy',
        inferenceApiKey: 'EMPTY',
        // More in flight than the server runs, so its queue never drains between requests.
        inferenceConcurrency: 2 * CAPACITY,
        trainerUrl: trainer.url,
      },
    },
    workflowBundle: await workflowBundle(),
  });
  const running = workers.map((w) => w.run());
  const connection = await Connection.connect({ address: temporal.address });
  try {
    const runId = 'bench-pipeline';
    const config = {
      recipe: 'spice',
      iterations: 1,
      batchSize: 128,
      groupSize: 8,
      shardSize: 32,
      corpus: { uri: 'test/fixtures/corpus/small.jsonl' },
      pools: queues,
    };
    const t0 = performance.now();
    await new Client({ connection }).workflow.execute(selfPlayRun, {
      workflowId: runId,
      taskQueue: queues.orchestrator,
      args: [config],
    });
    const wallSeconds = (performance.now() - t0) / 1000;

    const { completions, maxConcurrency } = llm.stats();
    const ideal = CAPACITY / (LATENCY_MS / 1000);
    const achieved = completions / wallSeconds;
    const busySeconds = completions / ideal;
    const manifest = await getJson<Manifest>(store, manifestKey(runId, 1));
    console.log(
      `server: capacity ${CAPACITY} completions, ${LATENCY_MS} ms each -> at most ${ideal.toFixed(1)} completions/s`,
    );
    console.log(
      `iteration: ${completions} completions in ${wallSeconds.toFixed(2)} s (max concurrency seen ${maxConcurrency})`,
    );
    for (const [stage, t] of Object.entries(manifest?.metrics.stages ?? {})) {
      console.log(
        `  ${stage.padEnd(8)} wall ${t.wallSeconds.toFixed(2)} s, busy ${t.busySeconds.toFixed(2)} s`,
      );
    }
    console.log(`achieved ${achieved.toFixed(1)} completions/s`);
    console.log(`orchestration_overhead_s ${(wallSeconds - busySeconds).toFixed(2)}`);
    console.log(`pipeline_utilization ${(achieved / ideal).toFixed(3)}`);
  } finally {
    workers.forEach((w) => w.shutdown());
    await Promise.all(running);
    await Promise.all([native.close(), connection.close(), llm.close(), trainer.close()]);
    await temporal.stop();
  }
}
