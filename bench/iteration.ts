import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { InferencePool } from '../activities/clients/inference';
import {
  openStore,
  readObjectAtUri,
  writeObjectAtUri,
  type ObjectStore,
} from '../activities/clients/storage';
import { getJson } from '../activities/clients/storage/codec';
import { manifestKey } from '../activities/clients/storage/keys';
import { RECIPES } from '../activities/recipes';
import type { Manifest } from '../contracts/selfplay';
import { selfPlayRun } from '../workflows';
import { createPoolWorkers, POOLS, queueNames } from '../workers/pools';
import { startScriptedLlm, type ScriptedLlm } from '../test/support/scripted-llm/server';
import type { LengthBin } from '../test/support/scripted-llm/config';
import {
  startRecordingTrainer,
  type RecordingTrainer,
  type RecordingTrainerOptions,
} from '../test/support/recording-trainer/server';
import { startTemporalDevServer } from '../test/support/temporal-server';
import { workflowBundle } from '../test/support/stack';
import { dataConverterFromEnv } from '../config/payload-codec';
import { loadWorkerEnv } from '../config/env';
import { DEFAULT_INPUT_ROOTS } from '../config/input-roots';

export interface BenchStackOptions {
  /** The scripted server's capacity (completions at once) and latency per completion. */
  capacity: number;
  latencyMs: number;
  /** σ of the long tail of completion latencies (scripted server `latencyTail`); 0 by default. */
  latencyTail?: number;
  /** A recorded generation-length histogram replayed in place of the log-normal (scripted server `lengths`). */
  lengths?: LengthBin[];
  /** Awaited before each training step: a simulated update and weight-sync time. */
  beforeStep?: RecordingTrainerOptions['beforeStep'];
  /**
   * The workers' completions in flight at the server (`SELFPLAY_INFERENCE_CONCURRENCY`); by default twice
   * its capacity, so its queue never drains between requests (`client-budget.ts` sizes it for long tails).
   */
  inferenceConcurrency?: number;
}

export interface IterationBenchOptions extends BenchStackOptions {
  /** Run config fields besides recipe, iterations and pools (batchSize, groupSize, corpus, ...). */
  config: Record<string, unknown>;
}

export interface IterationBenchResult {
  runId: string;
  wallSeconds: number;
  llm: ReturnType<ScriptedLlm['stats']>;
  trainer: ReturnType<RecordingTrainer['stats']>;
  manifest: Manifest;
  store: ObjectStore;
}

/**
 * A real Temporal dev server, local-directory storage and in-process workers (the real activities and
 * workflows), against the scripted LLM server and the recording trainer; runs SPICE runs one after another.
 */
export interface BenchStack {
  llm: ScriptedLlm;
  trainer: RecordingTrainer;
  store: ObjectStore;
  /** Runs `runId` to its end with these config fields (recipe and pools set); returns its wall seconds. */
  run(runId: string, config: Record<string, unknown>): Promise<number>;
  close(): Promise<void>;
}

export async function startBenchStack(options: BenchStackOptions): Promise<BenchStack> {
  const temporal = await startTemporalDevServer();
  const llm = await startScriptedLlm({
    capacity: options.capacity,
    latencyMs: options.latencyMs,
    latencyTail: options.latencyTail ?? 0,
    ...(options.lengths ? { lengths: options.lengths } : {}),
  });
  const trainer = await startRecordingTrainer({
    readBatch: readObjectAtUri,
    writeObject: writeObjectAtUri,
    ...(options.beforeStep ? { beforeStep: options.beforeStep } : {}),
  });
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
      env: loadWorkerEnv({
        ...process.env,
        SELFPLAY_STORAGE: storageUri,
        SELFPLAY_INFERENCE_URL: llm.url,
        SELFPLAY_INFERENCE_MODEL: 'scripted-policy',
        SELFPLAY_INFERENCE_CONCURRENCY: String(options.inferenceConcurrency ?? 2 * options.capacity),
        SELFPLAY_TRAINER_URL: trainer.url,
        // Benchmarks write their corpora to the temporary directory.
        SELFPLAY_INPUT_ROOTS: process.env.SELFPLAY_INPUT_ROOTS ?? `${DEFAULT_INPUT_ROOTS},${os.tmpdir()}`,
      }),
    },
    workflowBundle: await workflowBundle(),
  });
  const running = workers.map((w) => w.run());
  const connection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection, dataConverter: dataConverterFromEnv() });
  return {
    llm,
    trainer,
    store,
    async run(runId, config) {
      const t0 = performance.now();
      await client.workflow.execute(selfPlayRun, {
        workflowId: runId,
        taskQueue: queues.orchestrator,
        args: [{ recipe: 'spice', pools: queues, ...config }],
      });
      return (performance.now() - t0) / 1000;
    },
    async close() {
      workers.forEach((w) => w.shutdown());
      await Promise.all(running);
      await Promise.all([native.close(), connection.close(), llm.close(), trainer.close()]);
      await temporal.stop();
    },
  };
}

/** One SPICE iteration on a bench stack of its own. */
export async function runOneIteration(options: IterationBenchOptions): Promise<IterationBenchResult> {
  const stack = await startBenchStack(options);
  try {
    const runId = 'bench-iteration';
    const wallSeconds = await stack.run(runId, { iterations: 1, ...options.config });
    const manifest = await getJson<Manifest>(stack.store, manifestKey(runId, 1));
    if (!manifest) throw new Error('the iteration finished without a manifest');
    const { llm, trainer, store } = stack;
    return { runId, wallSeconds, llm: llm.stats(), trainer: trainer.stats(), manifest, store };
  } finally {
    await stack.close();
  }
}

/** Each stage's wall span and busy time, from the iteration's manifest. */
export function printStages(manifest: Manifest): void {
  for (const [stage, t] of Object.entries(manifest.metrics.stages ?? {})) {
    console.log(
      `  ${stage.padEnd(8)} wall ${t.wallSeconds.toFixed(2)} s, busy ${t.busySeconds.toFixed(2)} s`,
    );
  }
}
