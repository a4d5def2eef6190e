import { keptCommits, versionsToDelete, type KeepRule } from '../../activities/stages/retention-plan';
import { checkpointPrefix, snapshotPrefix, weightVersionOf } from '../../activities/clients/storage/keys';
import type { Lineage } from '../../contracts/lineage';

const rule = (over: Partial<KeepRule> = {}): KeepRule => ({
  keepLast: 2,
  keepEvery: 0,
  maxStaleness: 0,
  ...over,
});
/** The kept commits as `lineage@iteration`, sorted by iteration. */
const kept = (lineages: Lineage[], head: number, over: Partial<KeepRule> = {}): string[] =>
  keptCommits(lineages, head, rule(over))
    .commits.sort((a, b) => a.iteration - b.iteration)
    .map((c) => `${c.lineage}@${c.iteration}`);

describe('keptCommits', () => {
  const run: Lineage[] = [{ id: 'run' }];

  test('the newest keepLast commits, and every keepEvery-th iteration', () => {
    expect(kept(run, 7)).toEqual(['run@6', 'run@7']);
    expect(kept(run, 7, { keepEvery: 3 })).toEqual(['run@3', 'run@6', 'run@7']);
    expect(kept(run, 1, { keepLast: 5 })).toEqual(['run@1']);
  });

  test('at least maxStaleness + 1 commits: iterations in flight sample snapshots that far back', () => {
    expect(kept(run, 7, { keepLast: 1, maxStaleness: 2 })).toEqual(['run@5', 'run@6', 'run@7']);
  });

  test("the base weights (the run's start, iteration 0) stay while they are among the newest commits", () => {
    expect(keptCommits(run, 1, rule()).base).toBe('run');
    expect(keptCommits(run, 2, rule()).base).toBeUndefined();
    expect(keptCommits(run, 2, rule({ keepLast: 1, maxStaleness: 2 })).base).toBe('run');
    // A resumed run started from another run's commit, which that run keeps.
    expect(keptCommits([{ id: 'y', from: { lineage: 'z', iteration: 4 } }], 5, rule()).base).toBeUndefined();
  });

  test('after rollbacks: along the kept path, plus every commit a lineage started from; nothing abandoned', () => {
    // run committed 1..5, rolled back to 2 (run.r1 committed 3..4), then to 4 (run.r2 committed 5..7).
    const lineages: Lineage[] = [
      { id: 'run' },
      { id: 'run.r1', from: { lineage: 'run', iteration: 2 } },
      { id: 'run.r2', from: { lineage: 'run.r1', iteration: 4 } },
    ];
    expect(kept(lineages, 7)).toEqual(['run@2', 'run.r1@4', 'run.r2@6', 'run.r2@7']);
    // The window and the milestones reach back across lineages, to whichever holds each iteration.
    expect(kept(lineages, 5, { keepLast: 3, keepEvery: 3 })).toEqual([
      'run@2',
      'run.r1@3',
      'run.r1@4',
      'run.r2@5',
    ]);
  });

  test("a resumed run keeps only its own commits: the one it started from is the other run's", () => {
    const resumed: Lineage[] = [{ id: 'y', from: { lineage: 'z', iteration: 4 } }];
    expect(kept(resumed, 6, { keepLast: 5, keepEvery: 2 })).toEqual(['y@5', 'y@6']);
  });
});

describe('versionsToDelete', () => {
  const version = (prefix: string) => weightVersionOf(`${prefix}/COMPLETE`)!;
  const ckpt = (run: string, v: number) => version(checkpointPrefix(run, 'p', v));
  const snap = (run: string, v: number) => version(snapshotPrefix(run, 'p', v));
  const doomed = (stored: ReturnType<typeof version>[], kept: Parameters<typeof versionsToDelete>[1]) =>
    versionsToDelete(stored, kept).map((v) => v.prefix);

  test('deletes what no kept commit names, never the versions above the head in the current lineage', () => {
    const stored = [0, 1, 2, 3, 4].flatMap((v) => [ckpt('run', v), snap('run', v)]);
    const prefixes = new Set([checkpointPrefix('run', 'p', 3), snapshotPrefix('run', 'p', 3)]);
    expect(doomed(stored, { prefixes, current: 'run', headVersions: { p: 3 } })).toEqual([
      checkpointPrefix('run', 'p', 0),
      snapshotPrefix('run', 'p', 0),
      checkpointPrefix('run', 'p', 1),
      snapshotPrefix('run', 'p', 1),
      checkpointPrefix('run', 'p', 2),
      snapshotPrefix('run', 'p', 2),
    ]);
    // The base's version 0 stays while it is kept; a policy the head does not know is left alone.
    expect(doomed(stored, { prefixes, base: 'run', current: 'run', headVersions: { p: 3 } })).not.toContain(
      snapshotPrefix('run', 'p', 0),
    );
    expect(doomed(stored, { prefixes, current: 'run', headVersions: { other: 9 } })).toEqual([]);
  });

  test("another lineage's versions go whatever their number: nothing of it is in flight", () => {
    const stored = [ckpt('run', 2), ckpt('run', 5), ckpt('run.r1', 3)];
    expect(
      doomed(stored, {
        prefixes: new Set([checkpointPrefix('run', 'p', 2), checkpointPrefix('run.r1', 'p', 3)]),
        current: 'run.r1',
        headVersions: { p: 3 },
      }),
    ).toEqual([checkpointPrefix('run', 'p', 5)]);
  });
});

test('weightVersionOf parses the checkpoint and snapshot layout, and nothing else', () => {
  expect(weightVersionOf('runs/a.r1/checkpoints/solver/v000042/optimizer.pt')).toEqual({
    prefix: 'runs/a.r1/checkpoints/solver/v000042',
    runId: 'a.r1',
    policy: 'solver',
    version: 42,
  });
  expect(weightVersionOf('runs/a/snapshots/solver/v000001/tokenizer/tokenizer.json')?.version).toBe(1);
  expect(weightVersionOf('runs/a/iter-000001/manifest.json')).toBeUndefined();
  expect(weightVersionOf('runs/a/checkpoints/solver/v000001')).toBeUndefined();
});
