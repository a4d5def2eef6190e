import type { RunConfig } from './schema';
import { NON_RETRYABLE, nonRetryable } from '../contracts/errors';

/**
 * Which policies a run trains and which roles each one plays. Most recipes train one policy in every role
 * (`training.policy`); SCOPE trains two, each on its own kernel with its own versions, and a frozen judge
 * that no policy trains. Rows, endpoints and weight syncs are routed by role through this one map.
 */
export interface PolicySpec {
  name: string;
  /** The roles whose rows train this policy and whose endpoints serve it; `all` for a single-policy run. */
  roles: readonly string[] | 'all';
  trainerUrl?: string;
}

export function policySpecs(config: RunConfig): PolicySpec[] {
  const { policies, policy, trainerUrl } = config.training;
  if (!policies) return [{ name: policy, roles: 'all', ...(trainerUrl ? { trainerUrl } : {}) }];
  return Object.entries(policies)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, spec]) => ({
      name,
      roles: spec.roles,
      ...(spec.trainerUrl ? { trainerUrl: spec.trainerUrl } : {}),
    }));
}

export const policyNames = (config: RunConfig): string[] => policySpecs(config).map((p) => p.name);

/** The policy that plays `role`, or undefined for a role no policy trains (a frozen judge). */
export function policyForRole(config: RunConfig, role: string): PolicySpec | undefined {
  return policySpecs(config).find((p) => p.roles === 'all' || p.roles.includes(role));
}

/** The policy a training row of `role` trains; a row no policy takes is a configuration error. */
export function trainedPolicyOf(config: RunConfig, role: string): string {
  const spec = policyForRole(config, role);
  if (!spec) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `the recipe produced training rows for role "${role}", which no policy trains: add it to the roles of ` +
        `one of training.policies (${policyNames(config).join(', ')})`,
    );
  }
  return spec.name;
}

/** The policy held-out evaluation scores: the one playing role "eval" (every role, in a one-policy run). */
export function evaluatedPolicy(config: RunConfig): string {
  const spec = policyForRole(config, 'eval');
  if (!spec) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `no policy plays role "eval": add "eval" to the roles of the policy to evaluate, one of training.policies (${policyNames(config).join(', ')})`,
    );
  }
  return spec.name;
}

export function policySpec(config: RunConfig, name: string): PolicySpec {
  const spec = policySpecs(config).find((p) => p.name === name);
  if (!spec) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `no policy "${name}" in this run; it trains ${policyNames(config).join(', ')}`,
    );
  }
  return spec;
}
