import { ApplicationFailure } from '@temporalio/common';
import { latestKey, runPrefix } from '../../../activities/clients/storage/keys';
import { isNonRetryable } from '../../../activities/lib/errors';
import { rollbackLineage } from '../../../contracts/lineage';

/** The failure `fn` throws (the test fails if it throws none). */
const thrown = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
};

describe('a run id as a storage prefix', () => {
  test('run ids and their rollback lineages name their own prefix', () => {
    expect(runPrefix('spice-2025-01-01T00-00-00-000Z')).toBe('runs/spice-2025-01-01T00-00-00-000Z');
    const lineage = rollbackLineage('run', [{ id: 'run' }], 1).id;
    expect(latestKey(lineage)).toBe('runs/run.r1/latest.json');
    // A 128-character run id is valid, and so is its lineage, 3 characters longer.
    expect(runPrefix(`${'a'.repeat(128)}.r12`)).toBe(`runs/${'a'.repeat(128)}.r12`);
  });

  test.each([
    ['a b', 'a space is no usable key'],
    ['victim/mine', "a '/' nests the run under another run's prefix"],
    ['run.r1/x', 'a lineage form does not make a nested id valid'],
    ['a b.r1', 'nor an invalid run id'],
    ['-x', 'the first character is a letter or digit'],
  ])('%j is refused, non-retryably, with the rule (%s)', (runId) => {
    const err = thrown(() => runPrefix(runId));
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(isNonRetryable(err)).toBe(true);
    expect((err as ApplicationFailure).type).toBe('InvalidConfig');
    expect((err as Error).message).toBe(
      `run id ${JSON.stringify(runId)} cannot name a storage prefix: a run id takes letters, digits, ".", "_" or "-", ` +
        "starting with a letter or digit (max 128) (and a rollback's lineage adds .r{n})",
    );
  });
});
