import { evaluatedPolicy } from '../../config/policies';
import type { RunConfig } from '../../config/schema';
import type { CheckpointToEvaluate } from '../../contracts/evaluation';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import type { ActivityDeps } from '../stages/deps';
import { keptManifest, notCommittedAs } from '../stages/lineage';
import { mustBeRestorable } from '../stages/manifest';

/**
 * Which version `selfplay eval` scores: a run's kept iteration (its latest by default, along the lineage
 * that kept it after a rollback), or with iteration 0 the base weights (version 0). Orchestrator pool.
 */
export function checkpointActivities(deps: ActivityDeps) {
  return {
    async checkpointToEvaluate(input: {
      runId: string;
      iteration?: number;
      config: RunConfig;
    }): Promise<CheckpointToEvaluate> {
      const { runId, config } = input;
      const policy = evaluatedPolicy(config);
      if (input.iteration === 0) return { runId, iteration: 0, policy, committed: { version: 0 } };
      const { lineage, manifest } = await keptManifest(deps.store, runId, input.iteration).catch(
        notCommittedAs(NON_RETRYABLE.invalidInput, 'eval'),
      );
      const committed = manifest.policies[policy];
      if (!committed) {
        throw nonRetryable(
          NON_RETRYABLE.invalidInput,
          `eval: iteration ${manifest.iteration} of run "${runId}" committed ${Object.keys(manifest.policies).join(', ')}, not policy "${policy}"`,
        );
      }
      await mustBeRestorable(manifest, [policy], NON_RETRYABLE.invalidInput, 'eval');
      return { runId: lineage, iteration: manifest.iteration, policy, committed };
    },
  };
}
