import type { RunConfig } from './schema';
import type { EndpointSettings } from '../activities/clients/inference';
import { NON_RETRYABLE, nonRetryable } from '../activities/lib/errors';

/**
 * What a worker takes from its environment: where storage lives, default inference and trainer endpoints,
 * and every secret. None of it travels through Temporal.
 *
 *   SELFPLAY_STORAGE                 s3://bucket/prefix or a local directory (default .selfplay/storage)
 *   SELFPLAY_INFERENCE_URL           default OpenAI-compatible base URL, e.g. http://vllm:8000/v1
 *   SELFPLAY_INFERENCE_MODEL         default model name
 *   SELFPLAY_INFERENCE_API_KEY       API key (or OPENAI_API_KEY); "EMPTY" when unset, as vLLM expects
 *   SELFPLAY_INFERENCE_CONCURRENCY   completions in flight per endpoint from this worker (default 64)
 *   SELFPLAY_TRAINER_URL             the training kernel
 *   S3_ENDPOINT, AWS_*               S3-compatible server and credentials
 */
export interface WorkerEnv {
  storageUri: string;
  inferenceUrl?: string;
  inferenceModel?: string;
  inferenceApiKey: string;
  inferenceConcurrency: number;
  trainerUrl?: string;
}

export function loadWorkerEnv(env: NodeJS.ProcessEnv = process.env): WorkerEnv {
  const concurrency = Number(env.SELFPLAY_INFERENCE_CONCURRENCY ?? 64);
  if (!Number.isInteger(concurrency) || concurrency <= 0) {
    throw new Error(
      `SELFPLAY_INFERENCE_CONCURRENCY must be a positive integer, got ${env.SELFPLAY_INFERENCE_CONCURRENCY}`,
    );
  }
  return {
    storageUri: env.SELFPLAY_STORAGE || '.selfplay/storage',
    inferenceUrl: env.SELFPLAY_INFERENCE_URL || undefined,
    inferenceModel: env.SELFPLAY_INFERENCE_MODEL || undefined,
    inferenceApiKey: env.SELFPLAY_INFERENCE_API_KEY || env.OPENAI_API_KEY || 'EMPTY',
    inferenceConcurrency: concurrency,
    trainerUrl: env.SELFPLAY_TRAINER_URL || undefined,
  };
}

/**
 * A role's endpoint: the config's role entry, then its default entry, then the worker environment.
 * `{policy}` and `{version}` in the model name are filled in, so a vLLM server that gets a LoRA adapter per
 * version is asked for `"{policy}-v{version}"`, the adapter of exactly the version being sampled.
 */
export function endpointFor(
  role: string,
  config: RunConfig,
  env: WorkerEnv,
  policyVersion = 0,
): EndpointSettings {
  const fromRole = config.inference.roles[role] ?? {};
  const fromDefault = config.inference.default;
  const baseUrl = fromRole.baseUrl ?? fromDefault.baseUrl ?? env.inferenceUrl;
  const model = fromRole.model ?? fromDefault.model ?? env.inferenceModel;
  if (!baseUrl || !model) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `no inference endpoint for role "${role}": set inference.default.baseUrl/model in the run config ` +
        `or SELFPLAY_INFERENCE_URL and SELFPLAY_INFERENCE_MODEL on the rollout workers`,
    );
  }
  return {
    baseUrl,
    model: model
      .replaceAll('{policy}', config.training.policy)
      .replaceAll('{version}', String(policyVersion)),
    apiKey: env.inferenceApiKey,
    maxConcurrentCompletions: env.inferenceConcurrency,
    supportsN: fromRole.supportsN ?? fromDefault.supportsN ?? true,
    requestTimeoutMs: config.inference.requestTimeoutSeconds * 1000,
    maxRetries: config.inference.maxRetries,
  };
}

export function trainerUrlFor(config: RunConfig, env: WorkerEnv): string {
  const url = config.training.trainerUrl ?? env.trainerUrl;
  if (!url) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      'no training kernel: set training.trainerUrl in the run config or SELFPLAY_TRAINER_URL on the trainer workers',
    );
  }
  return url;
}

/**
 * The servers a weight sync must bring to each version: the configured list, else the base URL of every
 * endpoint that serves the policy (frozen endpoints, such as a separate judge, keep their own weights).
 */
export function syncServersFor(config: RunConfig, env: WorkerEnv): string[] {
  if (config.weightSync.servers.length > 0) return config.weightSync.servers;
  const policyRoles = Object.values(config.inference.roles).filter((r) => !r.frozen);
  const urls = [
    config.inference.default.frozen ? undefined : (config.inference.default.baseUrl ?? env.inferenceUrl),
    ...policyRoles.map((r) => r.baseUrl),
  ];
  return [...new Set(urls.filter((u): u is string => typeof u === 'string'))];
}
