import { resolveRunConfig, type RunConfig } from '../../config/schema';
import { ITERATION_INPUT_VERSION, type IterationResult } from '../../contracts/selfplay';
import { RunController } from '../../workflows/run-controller';

const resolved = (input: object): RunConfig => {
  const r = resolveRunConfig(input);
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.config;
};

const result = (iteration: number, meanReward = 0.5): IterationResult => ({
  iteration,
  policies: { policy: { version: iteration } },
  manifestKey: `runs/r/iter-${iteration}/manifest.json`,
  summary: {
    validTaskRate: 1,
    meanReward,
    meanRewardByRole: { reasoner: meanReward },
    zeroAdvantageFraction: 0,
    rows: 4,
    seconds: 1,
  },
});

/** A run of `config` that has loaded its start: its last commit is iteration 2. */
const begun = (input: object = {}): RunController => {
  const run = new RunController(resolved({ recipe: 'spice', iterations: 10, ...input }), 'r', undefined);
  run.begin({ nextIteration: 3, policies: { policy: { version: 2 } } });
  return run;
};

describe("the run's state and decisions, without Temporal", () => {
  test('controls that need the run started are refused until it has loaded where it starts', () => {
    const run = new RunController(resolved({ recipe: 'spice' }), 'r', undefined);
    expect(run.rollbackProblem({ iteration: 1 })).toBe('rollback: the run is still starting');
    expect(run.forkProblem({ id: 'f', iteration: 1 })).toBe('fork: the run is still starting');
    run.begin({ nextIteration: 3, policies: { policy: { version: 2 } } });
    expect(run.progress).toMatchObject({ lastCommitted: 2, iteration: 2, versions: { policy: 2 } });
    expect(run.rollbackProblem({ iteration: 1 })).toBeUndefined();
  });

  test('pause, resume and stop are refused when they would change nothing; the state says why it holds', () => {
    const run = begun();
    expect(run.resumeProblem()).toBe('resume: the run is not paused');
    run.progress.paused = true;
    expect(run.pauseProblem()).toBe('pause: the run is already paused');
    expect(run.activeState()).toBe('paused');
    run.progress.stopRequested = true;
    expect(run.stopProblem()).toBe('stopAfterIteration: a stop is already requested');
    expect(run.activeState()).toBe('stopping');
    run.progress.failure = { iteration: 3, type: 'InvalidConfig', message: 'x' };
    expect(run.activeState()).toBe('needsOperator');
    run.progress.state = 'completed';
    expect(run.retryProblem()).toBe('retryIteration: the run is complete');
  });

  test('a commit moves the start of the next iteration; recent results stay the last five', () => {
    const run = begun();
    for (let n = 3; n <= 9; n++) run.recordCommit(result(n));
    expect(run.recent.map((r) => r.iteration)).toEqual([5, 6, 7, 8, 9]);
    expect(run.progress.recent.map((r) => r.iteration)).toEqual([5, 6, 7, 8, 9]);
    expect(run.committed).toEqual({ policies: { policy: { version: 9 } } });
    expect(run.iterationInput(10)).toMatchObject({
      v: ITERATION_INPUT_VERSION,
      runId: 'r',
      iteration: 10,
      policies: { policy: { version: 9 } },
    });
    expect(run.continuesAsNew(9, false)).toBe(false);
    expect(run.sinceStart).toBe(7);
  });

  test('a rollback goes on from k in the new lineage, its columns showing k', () => {
    const run = begun();
    run.recordCommit(result(3, 0.25));
    run.recordCommit(result(4, 0.75));
    const columns = run.rolledBack(3, { id: 'r.r1', from: { lineage: 'r', iteration: 3 } }, result(3));
    expect(columns).toMatchObject({ iteration: 3, summary: { meanReward: 0.25 } });
    expect(run.progress).toMatchObject({ lastCommitted: 3, lineage: 'r.r1' });
    expect(run.recent.map((r) => r.iteration)).toEqual([3]);
    expect(run.iterationInput(4)).toMatchObject({ runId: 'r.r1', iteration: 4 });
    expect(run.memo()).toEqual({ storagePrefix: 'runs/r.r1' });
  });

  test('only the iteration the run starts with evaluates its start', () => {
    const run = begun({
      evaluation: { atStart: true, benchmarks: [{ name: 'b', uri: 'test/fixtures/eval/heldout.jsonl' }] },
    });
    expect(run.iterationInput(3).evaluateStart).toBe(true);
    expect(run.iterationInput(4)).not.toHaveProperty('evaluateStart');
  });
});
