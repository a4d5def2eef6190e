import { carryOf, type RunAtContinuation } from '../../workflows/run-carry';
import { runIdProblem } from '../../workflows/selfPlayRun';

describe('what a run hands over and owns', () => {
  const at = (progress: Partial<RunAtContinuation['progress']> = {}): RunAtContinuation => ({
    progress: { lastCommitted: 4, paused: false, stopRequested: false, ...progress },
    recent: [],
    committed: { policies: { policy: { version: 4 } }, recipeStateKey: 'runs/r/iter-000004/state.json' },
    resumedFrom: undefined,
    lineages: [{ id: 'r' }],
    configHash: 'abc',
  });

  test('a stop accepted while the run drained before continue-as-new is carried, so the continued run completes', () => {
    expect(carryOf(at({ stopRequested: true }))).toEqual({
      v: 1,
      nextIteration: 5,
      recent: [],
      policies: { policy: { version: 4 } },
      recipeStateKey: 'runs/r/iter-000004/state.json',
      configHash: 'abc',
      stopRequested: true,
    });
    expect(carryOf(at({ paused: true }))).toMatchObject({ paused: true });
    const plain = carryOf(at());
    expect(plain).not.toHaveProperty('stopRequested');
    expect(plain).not.toHaveProperty('paused');
    expect(plain).not.toHaveProperty('lineages');
  });

  test('config.runId must be the workflow id: no run writes into the storage of another', () => {
    expect(runIdProblem('spice-1', 'spice-1')).toBeUndefined();
    expect(runIdProblem('other-run', 'spice-1')).toBe(
      'runId: "other-run" is not this run\'s workflow id "spice-1"; a run writes only under its own id ' +
        '(leave runId out, or start the workflow with that id; resumeFrom reads another run)',
    );
  });
});
