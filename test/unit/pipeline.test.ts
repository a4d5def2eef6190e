import type { CancellationScope } from '@temporalio/workflow';
import {
  behaviourOf,
  nextOverlap,
  withSnapshots,
  type Flight,
  type OverlapBounds,
} from '../../workflows/pipeline';

/** When the run may start an iteration beside the ones in flight (`pipeline.maxStaleness`). */
describe('bounded staleness: which iteration may start beside the ones in flight', () => {
  const flight = (n: number, state: Partial<Flight> = {}): Flight => ({
    n,
    id: `r/iter-${n}`,
    scope: {} as CancellationScope,
    childStarted: true,
    ...state,
  });
  const sampled = { sampled: { policy: { version: 0 } } };
  const flights = (...list: Flight[]): Map<number, Flight> => new Map(list.map((f) => [f.n, f]));
  const bounds = (b: Partial<OverlapBounds> = {}): OverlapBounds => ({
    maxStaleness: 1,
    lastCommitted: 0,
    iterations: 10,
    untilContinueAsNew: 10,
    ...b,
  });

  test('k = 0 never overlaps; k = 1 starts n+1 once n has sampled and n−1 has committed', () => {
    const one = flights(flight(1, sampled));
    expect(nextOverlap(one, bounds({ maxStaleness: 0 }))).toBeUndefined();
    expect(nextOverlap(one, bounds())?.n).toBe(1);
    // Iteration 1 still sampling: 2 waits.
    expect(nextOverlap(flights(flight(1)), bounds())).toBeUndefined();
    // 2 sampled while 1 has not committed: 3 would train two versions behind its samples.
    const two = flights(flight(1, sampled), flight(2, sampled));
    expect(nextOverlap(two, bounds())).toBeUndefined();
    expect(nextOverlap(two, bounds({ maxStaleness: 2 }))?.n).toBe(2);
  });

  test('none starts past the last iteration, after a failed one, or past the continue-as-new point', () => {
    const one = flights(flight(3, sampled));
    expect(nextOverlap(one, bounds({ lastCommitted: 2, iterations: 3 }))).toBeUndefined();
    const failed = flights(flight(1, { ...sampled, outcome: { err: new Error('x') } }));
    expect(nextOverlap(failed, bounds())).toBeUndefined();
    // One iteration may still commit before continue-as-new, and it is in flight.
    expect(nextOverlap(flights(flight(1, sampled)), bounds({ untilContinueAsNew: 1 }))).toBeUndefined();
  });

  test('streaming starts n+1 once n has sent its requests, within the same staleness bound', () => {
    const issued = (version: number): Partial<Flight> => ({ issued: { policy: { version } } });
    const streaming = (versionsAtOnce: number, version = 0): Partial<OverlapBounds> => ({
      streaming: { versions: { policy: version }, versionsAtOnce },
    });
    const one = flights(flight(1, issued(0)));
    // Without streaming an iteration whose requests are sent but not answered holds the next one back.
    expect(nextOverlap(one, bounds())).toBeUndefined();
    expect(nextOverlap(one, bounds(streaming(1)))?.n).toBe(1);
    // 2 issued while 1 has not committed: 3 would still train two versions behind its samples.
    const two = flights(flight(1, sampled), flight(2, issued(0)));
    expect(nextOverlap(two, bounds(streaming(Infinity)))).toBeUndefined();
    // 1 committed (version 1) while 2 still samples version 0: an engine of one version at a time waits
    // for 2's answers; one that serves two versions does not.
    const after = flights(flight(2, issued(0)));
    expect(nextOverlap(after, bounds({ lastCommitted: 1, ...streaming(1, 1) }))).toBeUndefined();
    expect(nextOverlap(after, bounds({ lastCommitted: 1, ...streaming(2, 1) }))?.n).toBe(2);
    expect(behaviourOf(flight(2, issued(0)))).toEqual({ policy: { version: 0 } });
  });

  test('an overlapping iteration samples the snapshot its predecessor sampled when the version is the same', () => {
    const snapshot = { policy: 'p', version: 0, uri: 's3://b/v0', format: 'full' as const };
    expect(withSnapshots({ p: { version: 0 } }, { p: { version: 0, snapshot } })).toEqual({
      p: { version: 0, snapshot },
    });
    // A newer commit keeps its own (or none): an older snapshot is never served for it.
    expect(withSnapshots({ p: { version: 1 } }, { p: { version: 0, snapshot } })).toEqual({
      p: { version: 1 },
    });
  });
});
