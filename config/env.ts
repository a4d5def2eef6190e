import type { RunConfig } from './schema';
import type { EndpointSettings } from '../activities/clients/inference';
import { NON_RETRYABLE, nonRetryable } from '../contracts/errors';
import { policyForRole, policySpec } from './policies';
import { apiKeyFrom, credentialsFromEnv, NO_API_KEY } from './credentials';
import {
  INFERENCE_KEY_ENV,
  bindingsFromEnv,
  boundCredential,
  credentialProblem,
  requireBound,
  type Binding,
} from './endpoint-bindings';
import { inputRootsFromEnv, type InputRoots } from './input-roots';
import { fillModelName, hasPlaceholders } from './model-name';

/**
 * What a worker takes from its environment: where storage lives, default inference and trainer endpoints,
 * and every secret. None of it travels through Temporal. What each variable means is listed in
 * config/env-vars.ts (and the configuration reference generated from it).
 */
export interface WorkerEnv {
  storageUri: string;
  inferenceUrl?: string;
  inferenceModel?: string;
  inferenceConcurrency: number;
  trainerUrl?: string;
  /**
   * The credential variables by name (SELFPLAY_KERNEL_TOKEN, SELFPLAY_INFERENCE_API_KEY, those run configs
   * name by `apiKeyEnv`); each goes only to the servers `bindings` bind it to.
   */
  credentials: Readonly<Record<string, string>>;
  bindings: readonly Binding[];
  /** Where config-named inputs may be read from. */
  inputRoots: InputRoots;
  /** The Python that runs `selfplay_kernel.wandb_log` (tracking.wandb). */
  python?: string;
}

export function loadWorkerEnv(env: NodeJS.ProcessEnv = process.env): WorkerEnv {
  const concurrency = Number(env.SELFPLAY_INFERENCE_CONCURRENCY ?? 64);
  if (!Number.isInteger(concurrency) || concurrency <= 0) {
    throw new Error(
      `SELFPLAY_INFERENCE_CONCURRENCY must be a positive integer, got ${env.SELFPLAY_INFERENCE_CONCURRENCY}`,
    );
  }
  const storageUri = env.SELFPLAY_STORAGE || '.selfplay/storage';
  const inferenceKey = env[INFERENCE_KEY_ENV] || env.OPENAI_API_KEY;
  return {
    storageUri,
    inferenceUrl: env.SELFPLAY_INFERENCE_URL || undefined,
    inferenceModel: env.SELFPLAY_INFERENCE_MODEL || undefined,
    inferenceConcurrency: concurrency,
    trainerUrl: env.SELFPLAY_TRAINER_URL || undefined,
    credentials: {
      ...credentialsFromEnv(env),
      ...(inferenceKey ? { [INFERENCE_KEY_ENV]: inferenceKey } : {}),
    },
    bindings: bindingsFromEnv(env),
    inputRoots: inputRootsFromEnv(env, storageUri),
    ...(env.SELFPLAY_PYTHON ? { python: env.SELFPLAY_PYTHON } : {}),
  };
}

/**
 * The key of a configured server: the variable its entry names, none without a name. The variable must be
 * bound to the server's URL in the worker's environment (config/endpoint-bindings.ts): a run config chooses
 * which of the server's credentials to send, never where a credential goes.
 */
export function configuredApiKey(
  env: WorkerEnv,
  entry: { baseUrl?: string; apiKeyEnv?: string },
  what: string,
): string {
  if (entry.apiKeyEnv === undefined) return NO_API_KEY;
  const problem = entry.baseUrl
    ? credentialProblem(env.bindings, entry.apiKeyEnv, entry.baseUrl, what)
    : `${what} names its credential ${entry.apiKeyEnv} but no server to send it to`;
  if (problem) throw nonRetryable(NON_RETRYABLE.invalidConfig, problem);
  return apiKeyFrom(env.credentials, entry.apiKeyEnv, what);
}

/** The credential the worker binds to `url`, for the servers it sends one to by itself (trainers, syncs). */
export function boundToken(env: WorkerEnv, url: string): string | undefined {
  return boundCredential(env.bindings, env.credentials, url);
}

/**
 * A role's endpoint: the config's role entry, then its default entry, then the worker environment. Its API
 * key comes with its base URL: the entry that names the URL names the key variable (`apiKeyEnv`), and the
 * environment's URL gets the environment's key.
 * `{run}`, `{policy}` and `{version}` in the model name are filled in with the run, the policy that plays the
 * role and the version being sampled (config/model-name.ts), so a vLLM server that gets a LoRA adapter per
 * version is asked for `"{run}/{policy}-v{version}"`, the adapter of exactly that version of this run;
 * `digests` (the synced snapshots' `sha256`, `digestsOf`) add the weights' digest to the version, as the
 * sync named the adapter. A role no policy trains (a frozen judge) must name its model plainly.
 */
export function endpointFor(
  role: string,
  config: RunConfig,
  env: WorkerEnv,
  versions: Readonly<Record<string, number>> = {},
  digests: Readonly<Record<string, string>> = {},
): EndpointSettings {
  const fromRole = config.inference.roles[role] ?? {};
  const fromDefault = config.inference.default;
  const urlEntry = [fromRole, fromDefault].find((e) => e.baseUrl !== undefined);
  const baseUrl = urlEntry?.baseUrl ?? env.inferenceUrl;
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
    model: modelFor(role, model, config, versions, digests),
    apiKey: urlEntry
      ? configuredApiKey(env, urlEntry, `inference endpoint ${baseUrl} of role "${role}"`)
      : (boundToken(env, baseUrl) ?? NO_API_KEY),
    maxConcurrentCompletions: env.inferenceConcurrency,
    supportsN: fromRole.supportsN ?? fromDefault.supportsN ?? true,
    requestTimeoutMs: config.inference.requestTimeoutSeconds * 1000,
    maxRetries: config.inference.maxRetries,
  };
}

function modelFor(
  role: string,
  model: string,
  config: RunConfig,
  versions: Readonly<Record<string, number>>,
  digests: Readonly<Record<string, string>>,
): string {
  if (!hasPlaceholders(model)) return model;
  const policy = policyForRole(config, role);
  if (!policy) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `inference model "${model}" of role "${role}" names {run}/{policy}/{version}, but no policy trains "${role}": ` +
        `give its endpoint a fixed model name (a frozen judge serves the base model)`,
    );
  }
  const owner = { run: config.runId, policy: policy.name };
  return fillModelName(model, owner, versions[policy.name] ?? 0, digests[policy.name]);
}

/**
 * The versioned model name, placeholders unfilled, that the endpoints serving `policy` request (what a vLLM
 * sync names the policy's adapters): one name, since one adapter per version is loaded. Fixed names (a base
 * model) are no adapter's.
 */
export function servedModelTemplate(config: RunConfig, env: WorkerEnv, policy: string): string | undefined {
  const spec = policySpec(config, policy);
  const { roles, default: fromDefault } = config.inference;
  const modelOf = (entry?: { model?: string }) => entry?.model ?? fromDefault.model ?? env.inferenceModel;
  const serving =
    spec.roles === 'all'
      ? [
          fromDefault.frozen ? undefined : modelOf(),
          ...Object.values(roles)
            .filter((r) => !r.frozen)
            .map(modelOf),
        ]
      : spec.roles.map((role) => (roles[role]?.frozen ? undefined : modelOf(roles[role])));
  const models = [...new Set(serving.filter((m): m is string => m !== undefined && hasPlaceholders(m)))];
  if (models.length > 1) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `the endpoints of policy "${policy}" request different model names (${models.join(', ')}), but a weight ` +
        'sync loads one name per version: give them one model name',
    );
  }
  return models[0];
}

/**
 * The kernel that trains `policy`: its own URL in the config, then the run's, then the environment. It gets
 * the credential bound to it, so it must be one of the worker's servers (config/endpoint-bindings.ts).
 */
export function trainerUrlFor(config: RunConfig, env: WorkerEnv, policy: string): string {
  const url = policySpec(config, policy).trainerUrl ?? config.training.trainerUrl ?? env.trainerUrl;
  if (!url) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `no training kernel for policy "${policy}": set training.trainerUrl (or training.policies.${policy}.trainerUrl) ` +
        'in the run config, or SELFPLAY_TRAINER_URL on the trainer workers',
    );
  }
  requireBound(env.bindings, url, `the training kernel of policy "${policy}",`);
  return url;
}

/**
 * The servers a weight sync must bring to each version of `policy`: with one policy, the configured list,
 * else the base URL of every endpoint that serves it; with several, the endpoints of the policy's roles.
 * Frozen endpoints, such as a separate judge, keep their own weights.
 */
export function syncServersFor(config: RunConfig, env: WorkerEnv, policy: string): string[] {
  const spec = policySpec(config, policy);
  const defaultUrl = config.inference.default.frozen
    ? undefined
    : (config.inference.default.baseUrl ?? env.inferenceUrl);
  if (spec.roles === 'all') {
    if (config.weightSync.servers.length > 0) return config.weightSync.servers;
    const policyRoles = Object.values(config.inference.roles).filter((r) => !r.frozen);
    return unique([defaultUrl, ...policyRoles.map((r) => r.baseUrl)]);
  }
  return unique(
    spec.roles.map((role) => {
      const endpoint = config.inference.roles[role];
      if (endpoint?.frozen) return undefined;
      return endpoint?.baseUrl ?? defaultUrl;
    }),
  );
}

const unique = (urls: Array<string | undefined>): string[] => [
  ...new Set(urls.filter((u): u is string => typeof u === 'string')),
];
