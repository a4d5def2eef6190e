import { Connection, type Client } from '@temporalio/client';
import { getJson, getJsonl } from '../../activities/clients/storage/codec';
import { batchKey, manifestKey } from '../../activities/clients/storage/keys';
import { openStore, type ObjectStore } from '../../activities/clients/storage';
import type { TrainingRow } from '../../activities/clients/trainer-contract';
import type { Manifest } from '../../contracts/selfplay';
import type { RunOutcome } from '../../workflows/selfPlayRun';
import { selfPlayRun } from '../../workflows';
import { queueNames } from '../../workers/pools';
import {
  kernelAuth,
  kernelToken,
  startKernel,
  type KernelOptions,
  type KernelProcess,
} from './kernel-process';
import { DEFAULT_INPUT_ROOTS } from '../../config/input-roots';
import { spawnWorker } from './worker-process';
import { uniqueId } from './stack';
import { temporalClient } from './temporal-client';

/**
 * One run on real training kernels (the kernel's tiny model): one kernel process per policy name (a kernel holds
 * ONE policy, which it serves under that name), a worker serving every pool with the first kernel as its
 * default inference endpoint and trainer, Temporal and MinIO from the global setup. Everything is stopped
 * after `body`, whatever happens.
 */
export interface KernelRun {
  runId: string;
  storageUri: string;
  store: ObjectStore;
  /** The kernels by policy name; a test that restarts one puts the new process here, for the run to stop it. */
  kernels: Record<string, KernelProcess>;
  /** Kernels a test starts beside the run's (a clean replay's): stopped with them. */
  spares: KernelProcess[];
  /** The run-config fields every kernel run needs (queues, kernel weight sync, generous timeouts). */
  baseConfig: Record<string, unknown>;
  /** Runs `selfPlayRun` with `config` to its end. */
  execute(config: Record<string, unknown>): Promise<RunOutcome>;
  /** A Temporal client on the run's connection, for other workflows (e.g. `evaluateCheckpoint`). */
  client: Client;
  manifest(iteration: number): Promise<Manifest | undefined>;
  /** The rows iteration `iteration` trained `policy` on (empty when it had none). */
  rows(iteration: number, policy: string): Promise<TrainingRow[]>;
}

export async function withKernelRun<T>(
  options: {
    /** The model every kernel loads, or each policy's. */
    model: string | ((policy: string) => string);
    name: string;
    policies: (runId: string) => string[];
    /** Where the run stores its artifacts (default: a prefix of the test bucket, SELFPLAY_TEST_BUCKET). */
    storageUri?: (runId: string) => string;
    /** Directories the run's inputs lie in besides the session's input roots (config/input-roots.ts). */
    inputRoots?: string[];
    /** More of the worker's environment (e.g. SELFPLAY_PYTHON for W&B tracking). */
    workerEnv?: Record<string, string>;
    /** How every kernel is started besides its model and policy (a fault-injecting script, its environment). */
    kernel?: Pick<KernelOptions, 'env' | 'args' | 'script'>;
  },
  body: (run: KernelRun) => Promise<T>,
): Promise<T> {
  const runId = uniqueId(options.name);
  const prefix = uniqueId('kq');
  const storageUri =
    options.storageUri?.(runId) ?? `s3://${process.env.SELFPLAY_TEST_BUCKET as string}/${runId}`;
  const address = process.env.TEMPORAL_ADDRESS as string;
  const names = options.policies(runId);
  const started = await Promise.allSettled(
    names.map((policy) =>
      startKernel({
        ...options.kernel,
        model: typeof options.model === 'string' ? options.model : options.model(policy),
        policy,
      }),
    ),
  );
  const kernels: Record<string, KernelProcess> = {};
  started.forEach((s, i) => {
    if (s.status === 'fulfilled') kernels[names[i]!] = s.value;
  });
  const spares: KernelProcess[] = [];
  const stopAll = () => Promise.all([...Object.values(kernels), ...spares].map((k) => k.stop('SIGKILL')));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await stopAll();
    throw failed.reason;
  }
  const first = kernels[names[0]!]!;
  const worker = spawnWorker({
    TEMPORAL_ADDRESS: address,
    SELFPLAY_QUEUE_PREFIX: prefix,
    SELFPLAY_STORAGE: storageUri,
    SELFPLAY_INFERENCE_URL: `${first.url}/v1`,
    SELFPLAY_INFERENCE_MODEL: names[0]!,
    // The environment's inference URL is the first kernel's sampler, so its key is the kernel token.
    SELFPLAY_INFERENCE_API_KEY: kernelToken(),
    SELFPLAY_TRAINER_URL: first.url,
    SELFPLAY_INPUT_ROOTS: [
      process.env.SELFPLAY_INPUT_ROOTS ?? DEFAULT_INPUT_ROOTS,
      ...(options.inputRoots ?? []),
    ].join(','),
    // Every kernel of the run trains, samples and is synced with the token: the worker's environment says so.
    SELFPLAY_CREDENTIAL_BINDINGS: `SELFPLAY_KERNEL_TOKEN=${Object.values(kernels)
      .map((k) => k.url)
      .join(',')}`,
    ...options.workerEnv,
  });
  const connection = await Connection.connect({ address });
  const store = openStore(storageUri);
  const pools = queueNames(prefix);
  const client = temporalClient(connection);
  try {
    return await body({
      runId,
      storageUri,
      store,
      kernels,
      spares,
      baseConfig: {
        iterations: 1,
        weightSync: { engine: 'kernel' },
        pools,
        inference: { requestTimeoutSeconds: 120, maxRetries: 3 },
        timeouts: { heartbeatSeconds: 10, activityMaxAttempts: 5 },
      },
      client,
      execute: (config) =>
        client.workflow.execute(selfPlayRun, {
          workflowId: runId,
          taskQueue: pools.orchestrator,
          args: [config],
        }),
      manifest: (iteration) => getJson<Manifest>(store, manifestKey(runId, iteration)),
      rows: async (iteration, policy) =>
        (await getJsonl<TrainingRow>(store, batchKey(runId, iteration, policy))) ?? [],
    });
  } finally {
    await Promise.all([worker.stop('SIGKILL'), stopAll()]);
    await connection.close();
  }
}

/**
 * A SPICE run the tiny model makes in seconds per iteration: B = 2, G = 2, short segments and completions. A
 * random tiny model writes no valid task, so every Challenger group has equal rewards and Dr.GRPO advantages
 * would all be zero; REINFORCE (no baseline) makes each step a real update of the weights.
 */
export const tinySpice = (policy: string) => ({
  recipe: 'spice',
  batchSize: 2,
  shardSize: 2,
  groupSize: 2,
  corpus: { uri: 'test/fixtures/corpus/small.jsonl', maxSegmentChars: 600 },
  sampling: { maxTokens: 16 },
  spice: { maxAttempts: 2, typeSelectionAttempts: 1 },
  training: { policy, estimator: 'reinforce', optimizer: { learningRate: 1e-3 } },
});

/**
 * `tinySpice` with three documents a batch and one optimizer step per prompt: each update is 3 or more
 * optimizer steps (a prompt for each document, and any task's), one policy version.
 */
export const miniBatchedSpice = (policy: string) => {
  const spice = tinySpice(policy);
  return {
    ...spice,
    batchSize: 3,
    shardSize: 3,
    training: { ...spice.training, update: { miniBatchPrompts: 1 } },
  };
};

/** The distinct prompts of a batch's rows: a mini-batched update takes one optimizer step for each. */
export const promptCount = (rows: readonly TrainingRow[]): number =>
  new Set(rows.map((r) => JSON.stringify(r.messages))).size;

/** What a kernel's sampler says it serves `model` from (`/v1/models`). */
async function servedModel(
  kernel: KernelProcess,
  model: string,
): Promise<{ weight_version: number; weight_digest: string | null } | undefined> {
  const models = (await (await fetch(`${kernel.url}/v1/models`, { headers: kernelAuth() })).json()) as {
    data: Array<{ id: string; weight_version: number; weight_digest: string | null }>;
  };
  return models.data.find((m) => m.id === model);
}

/** The weight version a kernel's sampler serves `model` at. */
export async function servedVersion(kernel: KernelProcess, model: string): Promise<number | undefined> {
  return (await servedModel(kernel, model))?.weight_version;
}

/** The digest of the snapshot copy a kernel's sampler serves `model` from (null: its live weights). */
export async function servedDigest(kernel: KernelProcess, model: string): Promise<string | null | undefined> {
  return (await servedModel(kernel, model))?.weight_digest;
}

/** The version of the policy a kernel trains (`/v1/policies/{policy}`). */
export async function trainedVersion(kernel: KernelProcess, policy: string): Promise<number> {
  const state = (await (
    await fetch(`${kernel.url}/v1/policies/${policy}`, { headers: kernelAuth() })
  ).json()) as {
    policyVersion: number;
  };
  return state.policyVersion;
}
