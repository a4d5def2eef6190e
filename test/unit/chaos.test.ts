import { manifestKey, unitKey, unitPartKey } from '../../activities/clients/storage/keys';
import { iterationsLost, stepsAppliedTwice, unitsRecomputed } from '../../bench/chaos/audit';
import { FAULT_KINDS, faultPlan } from '../../bench/chaos/faults';

describe('chaos suite', () => {
  test('a seed gives one plan; every kind comes once per round, so the short plan has each kind', () => {
    const plan = faultPlan(1, 9);
    expect(faultPlan(1, 9)).toEqual(plan);
    expect(faultPlan(2, 9)).not.toEqual(plan);
    expect(plan.map((f) => f.kind).sort()).toEqual([...FAULT_KINDS].sort());
    const long = faultPlan(7, 54);
    for (const kind of FAULT_KINDS) expect(long.filter((f) => f.kind === kind)).toHaveLength(6);
    for (const f of long) {
      expect(f.gapMs).toBeGreaterThanOrEqual(1_000);
      expect(f.gapMs).toBeLessThanOrEqual(6_000);
      expect(f.downMs).toBeGreaterThanOrEqual(300);
      expect(f.downMs).toBeLessThanOrEqual(3_000);
    }
  });

  test('the audit: a unit result written twice, a step applied twice, an iteration without its one manifest or step', () => {
    const versions = new Map<string, number>([
      [unitKey('r', 1, 'solve', 0, 0), 1],
      [unitKey('r', 1, 'solve', 0, 1), 3],
      // A unit's parts (a trajectory's turns) are rewritten as it goes: not a recomputed unit.
      [unitPartKey('r', 1, 'solve', 0, 2, 'traj-0'), 4],
      [manifestKey('r', 1), 1],
      [manifestKey('r', 2), 2],
      [manifestKey('r', 3), 1],
    ]);
    expect(unitsRecomputed(versions)).toBe(2);
    expect(stepsAppliedTwice({ 'r/1/p': 1, 'r/2/p': 2, 'r/3/p': 3 })).toBe(3);
    const steps = [
      { runId: 'r', iteration: 1 },
      { runId: 'r', iteration: 2 },
      { runId: 'r', iteration: 4 },
      { runId: 'r', iteration: 4 },
    ];
    // 1 is whole; 2's commit was written twice; 3 has no step; 4 has no manifest and two steps.
    expect(iterationsLost([{ runId: 'r', upTo: 4 }], versions, steps)).toBe(3);
    expect(iterationsLost([{ runId: 'r', upTo: 1 }], versions, steps)).toBe(0);
  });
});
