import { runOfLineage } from '../../../contracts/lineage';
import { NON_RETRYABLE, nonRetryable } from '../../lib/errors';
import type { Engine, SyncTarget } from './types';

/**
 * An engine that serves one model per process (the kernel's sampler, SGLang) cannot serve two runs: a load
 * for one would replace the other's weights. So a sync that finds the server holding another run's weights
 * (`holder`, a run or one of its rollback lineages) refuses, non-retryably, instead of loading over them.
 * Weights that name no run (base weights, or loaded by a client from before run-scoped weights) are no one's.
 */
export function refuseOtherRun(
  engine: Engine,
  server: string,
  target: SyncTarget,
  holder: string | undefined,
): void {
  if (holder === undefined || target.run === undefined || runOfLineage(holder) === target.run) return;
  throw otherRunsWeights(
    `${engine} server ${server} serves run "${holder}"'s weights of policy "${target.snapshot.policy}", and ` +
      `serves one model at a time: run "${target.run}" cannot sample from it too. Give each run its own sampler`,
  );
}

/** The non-retryable failure of a sync that would take another run's weights from it. */
export const otherRunsWeights = (message: string) => nonRetryable(NON_RETRYABLE.invalidConfig, message);
