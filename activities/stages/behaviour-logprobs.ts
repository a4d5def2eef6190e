import type { RunConfig } from '../../config/schema';
import type { TrainingRow } from '../clients/trainer-contract';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';

/**
 * Whether the run's loss reads each row's behaviour log-probs μ (the sampler's, `TrainingRow.behaviourLogprobs`):
 * `tis` weighs every token by π_old/μ; the PPO ratio of `ppo_clip` under `ppo_ratio` is taken to μ, which with
 * `pipeline.maxStaleness` ≥ 1 is the log-prob under a policy up to k versions older than the one trained. A
 * synchronous row was sampled by the policy it trains, so the kernel's stand-in for a missing μ (the current
 * log-prob: ratio 1) is exact for it; REINFORCE under `ppo_ratio` reads no μ at all.
 */
export function lossReadsBehaviour(config: RunConfig): boolean {
  const { type, offPolicy } = config.training.loss;
  return offPolicy === 'tis' || (type === 'ppo_clip' && staleness(config) >= 1);
}

/**
 * Refuses a batch whose loss reads μ (`lossReadsBehaviour`) when some row has none: the kernel would take its
 * ratio or importance weight as 1, training a row sampled by an older policy as if the current one had
 * sampled it, silently. Rows lack μ when the engine that sampled them returned no log-probs. Non-retryable:
 * the same rollouts would be refused again; the message names the rows' roles and the two ways out.
 */
export function requireBehaviourLogprobs(config: RunConfig, rows: readonly TrainingRow[]): void {
  if (!lossReadsBehaviour(config)) return;
  const missing = rows.filter((row) => row.behaviourLogprobs === undefined);
  const first = missing[0];
  if (!first) return;
  const roles = [...new Set(missing.map((row) => row.role))].sort();
  const k = staleness(config);
  const reason =
    config.training.loss.offPolicy === 'tis'
      ? 'training.loss.offPolicy "tis" weighs each token by π_old/μ, μ its log-prob under the policy that sampled it' +
        (k >= 1 ? ` (with pipeline.maxStaleness ${k}, up to ${versions(k)} older than the one trained)` : '')
      : `with pipeline.maxStaleness ${k} a row may be sampled up to ${versions(k)} before the one trained, and the ` +
        'PPO ratio (training.loss.offPolicy "ppo_ratio") is taken to μ, its log-prob under the policy that sampled it';
  const otherwise =
    k >= 1 ? 'set pipeline.maxStaleness 0 (synchronous)' : 'set training.loss.offPolicy "ppo_ratio"';
  throw nonRetryable(
    NON_RETRYABLE.invalidConfig,
    `${missing.length} of ${rows.length} training rows carry no behaviour log-probs (roles ${roles.join(', ')}; ` +
      `first: role "${first.role}", group "${first.group}"), but ${reason}. Without μ the kernel would take the ` +
      'ratio as 1 and train the row as if the current policy had sampled it. Sample these roles from an engine ' +
      `that returns log-probs (vLLM, SGLang or the kernel's sampler), or ${otherwise}.`,
  );
}

const versions = (k: number): string => (k === 1 ? 'one version' : `${k} versions`);

const staleness = (config: RunConfig): number => config.pipeline.maxStaleness;
