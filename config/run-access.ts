import type { RunConfig } from './schema';
import type { WorkerEnv } from './env';
import { loadWorkerEnv, syncServersFor } from './env';
import { credentialProblem, unboundProblem } from './endpoint-bindings';
import { inputProblem, inputProblems } from './input-roots';
import { policyNames } from './policies';
import { NON_RETRYABLE, nonRetryable } from '../activities/lib/errors';

/**
 * What a run config may reach on this worker (docs/security.md): every credential it names bound to its
 * server, every trainer and weight-sync server one of the worker's, every input under the input roots. The
 * CLI checks it before it starts, schedules or forks a run, and every run's first activity again with the
 * workers' environment; the stages check what they use when they use it, so a workflow started any other
 * way gets no further.
 */
export function runAccessProblems(config: RunConfig, env: WorkerEnv): string[] {
  const { inference, retrieval, training, weightSync } = config;
  const entries = [
    { field: 'inference.default', entry: inference.default },
    ...Object.entries(inference.roles).map(([role, entry]) => ({ field: `inference.roles.${role}`, entry })),
    ...(retrieval.embedding ? [{ field: 'retrieval.embedding', entry: retrieval.embedding }] : []),
  ];
  const credentials = entries.flatMap(({ field, entry }) =>
    entry.apiKeyEnv && entry.baseUrl
      ? [credentialProblem(env.bindings, entry.apiKeyEnv, entry.baseUrl, `${field} (${entry.baseUrl})`)]
      : [],
  );
  const configuredTrainers = [
    ...(training.trainerUrl ? [{ field: 'training.trainerUrl', url: training.trainerUrl }] : []),
    ...Object.entries(training.policies ?? {}).flatMap(([name, p]) =>
      p.trainerUrl ? [{ field: `training.policies.${name}.trainerUrl`, url: p.trainerUrl }] : [],
    ),
  ];
  const trainers = configuredTrainers.map(({ field, url }) => unboundProblem(env.bindings, url, field));
  const syncs =
    weightSync.engine === 'none'
      ? []
      : [...new Set(policyNames(config).flatMap((policy) => syncServersFor(config, env, policy)))].map(
          (url) => unboundProblem(env.bindings, url, 'weight-sync server'),
        );
  return [...credentials, ...trainers, ...syncs, ...inputProblems(env.inputRoots, config)].filter(
    (p): p is string => p !== undefined,
  );
}

/**
 * The CLI's refusal of a config it would start, schedule or fork, checked with its own environment (give it
 * the workers' SELFPLAY_CREDENTIAL_BINDINGS, SELFPLAY_INPUT_ROOTS and SELFPLAY_STORAGE); undefined when none.
 */
export function startRefusal(config: RunConfig, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const problems = runAccessProblems(config, loadWorkerEnv(env));
  return problems.length > 0 ? `refused (docs/security.md):\n  ${problems.join('\n  ')}` : undefined;
}

/** `runAccessProblems` as one non-retryable failure listing them all. */
export function requireRunAccess(config: RunConfig, env: WorkerEnv): void {
  const problems = runAccessProblems(config, env);
  if (problems.length > 0) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `the run config reaches beyond this deployment:\n- ${problems.join('\n- ')}`,
    );
  }
}

/** Non-retryable when an input the run's recipe reads lies outside the input roots. */
export function requireInputs(config: RunConfig, env: WorkerEnv): void {
  const problems = inputProblems(env.inputRoots, config);
  if (problems.length > 0) throw nonRetryable(NON_RETRYABLE.invalidConfig, problems.join('; '));
}

/** Non-retryable when `uri`, the input of config field `field`, lies outside the input roots. */
export function requireInput(env: WorkerEnv, uri: string, field: string): void {
  const problem = inputProblem(env.inputRoots, uri, field);
  if (problem) throw nonRetryable(NON_RETRYABLE.invalidConfig, problem);
}
