import { RUN_CARRY_VERSION, type IterationResult, type RunCarry, type RunStart } from '../contracts/selfplay';
import type { Lineage } from '../contracts/lineage';
import type { RunProgress } from './messages';

/** What the run knows when it continues as new. */
export interface RunAtContinuation {
  progress: Pick<RunProgress, 'lastCommitted' | 'paused' | 'stopRequested'>;
  recent: IterationResult[];
  committed: Pick<RunStart, 'policies' | 'recipeStateKey'>;
  resumedFrom: RunStart['resumedFrom'];
  lineages: Lineage[];
  configHash: string | undefined;
}

/**
 * The state continue-as-new hands over, read once the run has drained (its handlers finished): a rollback
 * handled meanwhile has moved `lastCommitted` back, and a pause or a stop accepted meanwhile holds in the
 * continued run (a stop accepted while draining used to be lost: the continued run went on).
 */
export function carryOf(run: RunAtContinuation): RunCarry {
  const carry: RunCarry = {
    v: RUN_CARRY_VERSION,
    nextIteration: run.progress.lastCommitted + 1,
    recent: run.recent,
    ...run.committed,
  };
  if (run.resumedFrom) carry.resumedFrom = run.resumedFrom;
  if (run.lineages.length > 1) carry.lineages = run.lineages;
  if (run.configHash) carry.configHash = run.configHash;
  if (run.progress.paused) carry.paused = true;
  if (run.progress.stopRequested) carry.stopRequested = true;
  return carry;
}
