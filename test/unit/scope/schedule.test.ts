import { documentOffset, scopeAccumulation, scopeStep } from '../../../activities/recipes/scope/schedule';
import { upgradeIterationInput } from '../../../contracts/input-upgrade';
import { configFor } from '../../support/recipe-harness';

const staged = configFor({
  recipe: 'scope',
  batchSize: 4,
  shardSize: 2,
  scope: { schedule: { stageSteps: 2, solverTasks: 3, candidatesPerRound: 5, maxRounds: 2 } },
});

describe('SCOPE schedule: the stage of an iteration', () => {
  test('rounds of K Challenger steps, then K Solver steps, numbered within their stage', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => scopeStep(staged, n))).toEqual([
      { stage: 'challenger', round: 1, stageIteration: 1 },
      { stage: 'challenger', round: 1, stageIteration: 2 },
      { stage: 'solver', round: 1, stageIteration: 1 },
      { stage: 'solver', round: 1, stageIteration: 2 },
      { stage: 'challenger', round: 2, stageIteration: 1 },
      { stage: 'challenger', round: 2, stageIteration: 2 },
      { stage: 'solver', round: 2, stageIteration: 1 },
      { stage: 'solver', round: 2, stageIteration: 2 },
    ]);
  });

  test('joint, and iteration inputs recorded before the schedule existed, have no stages', () => {
    const joint = configFor({ recipe: 'scope', scope: { schedule: { mode: 'joint' } } });
    expect(scopeStep(joint, 3)).toBeUndefined();
    const { schedule: _dropped, ...older } = staged.scope;
    // Upgraded at the iteration's entry (contracts/input-upgrade.ts) to the joint schedule it ran with.
    const { config: recorded } = upgradeIterationInput({
      v: 2,
      runId: 'r',
      iteration: 3,
      policies: {},
      config: { ...staged, scope: older },
    });
    expect(scopeStep(recorded, 3)).toBeUndefined();
    expect(scopeAccumulation(recorded, 3)).toBeUndefined();
    expect(documentOffset(recorded, 3, 0)).toBe(2 * 4);
  });

  test('only a Solver step gathers rounds, until it has kept solverTasks tasks', () => {
    expect(scopeAccumulation(staged, 2)).toBeUndefined();
    expect(scopeAccumulation(staged, 3)).toEqual({ metric: 'keptTasks', target: 3, maxRounds: 2 });
  });

  test("every step's documents are its own: Challenger steps B each, Solver steps maxRounds rounds of C", () => {
    // Round 1: Challenger 0–3, 4–7; Solver step 1 rounds at 8 and 13, step 2 at 18 and 23; round 2 from 28
    // (its Solver step 1's second round after its 8 Challenger documents and one round of 5).
    const windows = [
      [1, 0],
      [2, 0],
      [3, 0],
      [3, 1],
      [4, 0],
      [4, 1],
      [5, 0],
      [7, 1],
    ].map(([n, r]) => documentOffset(staged, n!, r!));
    expect(windows).toEqual([0, 4, 8, 13, 18, 23, 28, 28 + 8 + 5]);
  });
});
