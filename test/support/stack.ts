import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import {
  bundleWorkflowCode,
  DefaultLogger,
  NativeConnection,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { InferencePool } from '../../activities/clients/inference';
import {
  openStore,
  readObjectAtUri,
  writeObjectAtUri,
  type ObjectStore,
} from '../../activities/clients/storage';
import { RECIPES } from '../../activities/recipes';
import { createPoolWorkers, POOLS, queueNames, type Pool } from '../../workers/pools';
import { loadWorkerEnv, type WorkerEnv } from '../../config/env';
import { BINDINGS_ENV, bindingsFromEnv } from '../../config/endpoint-bindings';
import { startScriptedLlm, type ScriptedLlm, type ScriptedLlmOptions } from './scripted-llm/server';
import {
  startRecordingTrainer,
  type RecordingTrainer,
  type RecordingTrainerOptions,
} from './recording-trainer/server';
import { temporalClient } from './temporal-client';

/**
 * A whole stack for one test file, on the real servers of the global setup: Temporal, MinIO (under a
 * fresh prefix), the scripted LLM and the recording trainer over real HTTP, and in-process workers running
 * the real activities and workflows.
 */
export interface TestStack {
  client: Client;
  store: ObjectStore;
  storageUri: string;
  llm: ScriptedLlm;
  trainer: RecordingTrainer;
  queuePrefix: string;
  /** The environment a worker process of this stack needs (for tests that spawn real worker processes). */
  workerEnv: Record<string, string>;
  /** The environment the `selfplay` CLI needs to reach this stack's runs: its Temporal server and storage. */
  cliEnv: Record<string, string>;
  /** A run config for this stack: pools, endpoints and small defaults, overridden by `overrides`. */
  runConfig(overrides?: Record<string, unknown>): Record<string, unknown>;
  /**
   * Lets this stack's in-process workers call more servers (a test's own trainers or engines) with
   * `credential`, as SELFPLAY_CREDENTIAL_BINDINGS on a worker would.
   */
  bind(credential: string, ...urls: string[]): void;
  /** Runs in-process workers for the given pools until `fn` settles. */
  withWorkers<T>(fn: () => Promise<T>, pools?: readonly Pool[]): Promise<T>;
  close(): Promise<void>;
}

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;
/** Bundling the workflows takes seconds; do it once per test process. */
export const workflowBundle = (): Promise<WorkflowBundleWithSourceMap> =>
  (bundle ??= bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    logger: new DefaultLogger('WARN'),
  }));

export interface StackOptions {
  llm?: ScriptedLlmOptions;
  storage?: 's3' | 'local';
  localDir?: string;
  /** Another Temporal server than the global setup's (e.g. one serving the Web UI). */
  temporalAddress?: string;
  /**
   * Task queues `{prefix}-orchestrator|rollout|trainer`; by default unique per stack, so files sharing one
   * server never steal each other's tasks. `selfplay` gives the production defaults (a dedicated server only).
   */
  queuePrefix?: string;
  /** Awaited before each new training step (see `RecordingTrainerOptions.beforeStep`). */
  beforeStep?: RecordingTrainerOptions['beforeStep'];
  /** More of the in-process workers' environment (e.g. `python` for W&B tracking). */
  env?: Partial<WorkerEnv>;
}

export async function startStack(options: StackOptions = {}): Promise<TestStack> {
  const address = options.temporalAddress ?? required('TEMPORAL_ADDRESS');
  const suffix = randomUUID().slice(0, 8);
  const storageUri =
    options.storage === 'local'
      ? (options.localDir ?? mkdtempSync(path.join(os.tmpdir(), 'selfplay-store-')))
      : `s3://${required('SELFPLAY_TEST_BUCKET')}/it-${suffix}`;
  const store = openStore(storageUri);
  const llm = await startScriptedLlm(options.llm ?? {});
  const trainer = await startRecordingTrainer({
    readBatch: readObjectAtUri,
    writeObject: writeObjectAtUri,
    ...(options.beforeStep ? { beforeStep: options.beforeStep } : {}),
  });
  const connection = await Connection.connect({ address });
  const client = temporalClient(connection);
  const queuePrefix = options.queuePrefix ?? `it-${suffix}`;
  const env: WorkerEnv = {
    ...loadWorkerEnv({
      ...process.env,
      SELFPLAY_STORAGE: storageUri,
      SELFPLAY_INFERENCE_URL: llm.url,
      SELFPLAY_INFERENCE_MODEL: 'scripted-policy',
      SELFPLAY_INFERENCE_CONCURRENCY: '64',
      SELFPLAY_TRAINER_URL: trainer.url,
    }),
    ...options.env,
  };

  return {
    client,
    store,
    storageUri,
    llm,
    trainer,
    queuePrefix,
    workerEnv: scriptedWorkerEnv({
      address,
      queuePrefix,
      storageUri,
      llmUrl: llm.url,
      trainerUrl: trainer.url,
    }),
    cliEnv: { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: 'default', SELFPLAY_STORAGE: storageUri },
    bind: (credential, ...urls) => {
      env.bindings = [
        ...env.bindings,
        ...bindingsFromEnv({ [BINDINGS_ENV]: `${credential}=${urls.join(',')}` }),
      ];
    },
    runConfig: (overrides = {}) => ({
      recipe: 'spice',
      batchSize: 8,
      shardSize: 4,
      groupSize: 4,
      iterations: 3,
      corpus: { uri: 'test/fixtures/corpus/small.jsonl' },
      sampling: { maxTokens: 2048 },
      pools: queueNames(queuePrefix),
      inference: { requestTimeoutSeconds: 10, maxRetries: 3 },
      timeouts: { heartbeatSeconds: 10, activityMaxAttempts: 5 },
      ...overrides,
    }),
    async withWorkers(fn, pools = POOLS) {
      const nativeConnection = await NativeConnection.connect({ address });
      const workers = await createPoolWorkers({
        connection: nativeConnection,
        namespace: 'default',
        pools,
        queues: queueNames(queuePrefix),
        deps: { store, env, inference: new InferencePool(), recipes: RECIPES },
        workflowBundle: await workflowBundle(),
      });
      const running = workers.map((w) => w.run());
      try {
        return await fn();
      } finally {
        workers.forEach((w) => w.shutdown());
        await Promise.all(running);
        await nativeConnection.close();
      }
    },
    async close() {
      await Promise.all([llm.close(), trainer.close(), connection.close()]);
    },
  };
}

export const uniqueId = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the integration tests through jest's global setup`);
  return value;
}

/** A worker process's environment on a local stack of the scripted LLM and a trainer. */
export function scriptedWorkerEnv(stack: {
  address: string;
  queuePrefix: string;
  storageUri: string;
  llmUrl: string;
  trainerUrl: string;
}): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: stack.address,
    SELFPLAY_QUEUE_PREFIX: stack.queuePrefix,
    SELFPLAY_STORAGE: stack.storageUri,
    SELFPLAY_INFERENCE_URL: stack.llmUrl,
    SELFPLAY_INFERENCE_MODEL: 'scripted-policy',
    SELFPLAY_TRAINER_URL: stack.trainerUrl,
  };
}
