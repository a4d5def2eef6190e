import type { RunConfig } from '../../../config/schema';
import type { Accumulation, ScheduleStep } from '../../../contracts/selfplay';
import { CHALLENGER, SOLVER } from './records';

/**
 * SCOPE's two stages (scope.md §1) as a function of the iteration number alone, so the schedule is as durable
 * as the run's commits: a resumed, rolled-back or forked run is in the stage its next iteration number says.
 * Each round (the paper's iteration t) is K Challenger steps against the frozen Solver, then K Solver steps
 * on freshly selected tasks against the frozen Challenger.
 */

/** The iteration's stage, round and step within the stage; undefined under the `joint` schedule. */
export function scopeStep(config: RunConfig, iteration: number): ScheduleStep | undefined {
  const s = config.scope.schedule;
  if (s.mode !== 'stages') return undefined;
  const k = s.stageSteps;
  const place = (iteration - 1) % (2 * k);
  return {
    stage: place < k ? CHALLENGER : SOLVER,
    round: Math.floor((iteration - 1) / (2 * k)) + 1,
    stageIteration: (place % k) + 1,
  };
}

export const isSolverStep = (config: RunConfig, iteration: number): boolean =>
  scopeStep(config, iteration)?.stage === SOLVER;

/** A Solver step gathers rounds of candidates until `solverTasks` tasks are kept (the judge's `keptTasks`). */
export function scopeAccumulation(config: RunConfig, iteration: number): Accumulation | undefined {
  if (!isSolverStep(config, iteration)) return undefined;
  const s = config.scope.schedule;
  return { metric: 'keptTasks', target: s.solverTasks, maxRounds: s.maxRounds };
}

/**
 * Where the iteration's documents start in the run's corpus permutation, so no two steps share documents
 * until the corpus is used up: `joint`, B per iteration; `stages`, each round reserves K·B documents for its
 * Challenger steps, then K·maxRounds·C for its Solver steps (C candidates per selection round, each its own).
 */
export function documentOffset(config: RunConfig, iteration: number, selectionRound: number): number {
  const step = scopeStep(config, iteration);
  if (!step) return (iteration - 1) * config.batchSize;
  const s = config.scope.schedule;
  const challengerDocs = s.stageSteps * config.batchSize;
  const solverStepDocs = s.maxRounds * s.candidatesPerRound;
  const round = (step.round - 1) * (challengerDocs + s.stageSteps * solverStepDocs);
  const j = step.stageIteration - 1;
  if (step.stage === CHALLENGER) return round + j * config.batchSize;
  return round + challengerDocs + j * solverStepDocs + selectionRound * s.candidatesPerRound;
}
