import {
  firstAvailable,
  initialLineages,
  lineageHolding,
  lineagePath,
  rollbackLineage,
  rollbackProblem,
  type Lineage,
} from '../../contracts/lineage';

describe('lineages', () => {
  // run committed 1..3; rolled back to 2 (r1 committed 3, 4); then to 1 (r2).
  const r1: Lineage = { id: 'run.r1', from: { lineage: 'run', iteration: 2 } };
  const r2: Lineage = { id: 'run.r2', from: { lineage: 'run', iteration: 1 } };

  test('the path follows `from` back from the current lineage, skipping abandoned ones', () => {
    expect(lineagePath([{ id: 'run' }])).toEqual([{ id: 'run', after: 0 }]);
    expect(lineagePath([{ id: 'run' }, r1])).toEqual([
      { id: 'run', after: 0, upTo: 2 },
      { id: 'run.r1', after: 2 },
    ]);
    expect(lineagePath([{ id: 'run' }, r1, r2])).toEqual([
      { id: 'run', after: 0, upTo: 1 },
      { id: 'run.r2', after: 1 },
    ]);
  });

  test('each kept iteration is held by one lineage; a rollback names it and counts lineages', () => {
    const lineages = [{ id: 'run' }, r1];
    expect([1, 2, 3, 4].map((k) => lineageHolding(lineages, k))).toEqual(['run', 'run', 'run.r1', 'run.r1']);
    expect(lineageHolding(lineages, 0)).toBeUndefined();
    expect(rollbackLineage('run', lineages, 1)).toEqual(r2);
    expect(rollbackLineage('run', lineages, 3)).toEqual({
      id: 'run.r2',
      from: { lineage: 'run.r1', iteration: 3 },
    });
  });

  test('a resumed run starts from another run, which holds only the iteration it resumed from', () => {
    const lineages = [
      ...initialLineages('fork', { runId: 'old.r1', iteration: 5 }),
      { id: 'fork.r1', from: { lineage: 'fork', iteration: 7 } },
    ];
    expect(firstAvailable(lineages)).toBe(5);
    expect([4, 5, 6, 7, 8].map((k) => lineageHolding(lineages, k))).toEqual([
      undefined,
      'old.r1',
      'fork',
      'fork',
      'fork.r1',
    ]);
  });

  test('rollback requests are checked against the run', () => {
    const run = { lineages: [{ id: 'run' }], lastCommitted: 3, iterationInFlight: true, checkpoints: true };
    expect(rollbackProblem(run, { iteration: 1 })).toBeUndefined();
    expect(rollbackProblem(run, { iteration: 3 })).toBeUndefined();
    expect(rollbackProblem({ ...run, iterationInFlight: false }, { iteration: 3 })).toContain(
      'nothing to roll back',
    );
    expect(rollbackProblem(run, { iteration: 4 })).toBe('iteration 4 is not committed (last committed: 3)');
    expect(rollbackProblem(run, { iteration: 0 })).toContain('before the run');
    expect(rollbackProblem(run, { iteration: '2' })).toContain('expected {"iteration": N}');
    expect(rollbackProblem({ ...run, checkpoints: false }, { iteration: 1 })).toContain(
      'training.checkpoint is off',
    );
  });
});
