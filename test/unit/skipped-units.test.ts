import { ContextLengthExceeded } from '../../activities/clients/inference';
import {
  isSkipped,
  skipOverLongUnit,
  splitSkipped,
  withoutSkippedUnits,
} from '../../activities/stages/skipped-units';

describe('units skipped for a prompt over the context', () => {
  test('a context-length refusal makes the skip record; any other failure still fails the unit', async () => {
    const skipped = await skipOverLongUnit(3, 'propose', () =>
      Promise.reject(new ContextLengthExceeded('inference x (m): maximum context length is 4096 tokens')),
    );
    expect(skipped).toEqual({
      unit: 3,
      skipped: 'context_length',
      stage: 'propose',
      reason: 'inference x (m): maximum context length is 4096 tokens',
    });
    expect(isSkipped(skipped)).toBe(true);
    await expect(skipOverLongUnit(3, 'solve', () => Promise.reject(new Error('500')))).rejects.toThrow('500');
    expect(await skipOverLongUnit(3, 'solve', () => Promise.resolve({ unit: 3 }))).toEqual({ unit: 3 });
  });

  test('the filter gets every stage without the units any stage skipped, and their count', () => {
    const skip = (unit: number, stage: string) => ({ unit, skipped: 'context_length', stage, reason: 'r' });
    const records = (stage: string, skippedUnit?: number) =>
      [0, 1, 2].map((unit) => (unit === skippedUnit ? skip(unit, stage) : { unit, stage }));
    const { shard, skipped } = withoutSkippedUnits({
      shard: 0,
      plan: [0, 1, 2].map((unit) => ({ unit, docIndex: unit })),
      propose: records('propose'),
      gate: records('gate'),
      solve: records('solve', 2),
      judge: records('judge', 2),
    });
    expect(skipped).toBe(1);
    for (const stage of [shard.plan, shard.propose, shard.gate, shard.solve, shard.judge])
      expect(stage.map((r) => r.unit)).toEqual([0, 1]);
    expect(splitSkipped(records('judge', 1))).toEqual({
      kept: [
        { unit: 0, stage: 'judge' },
        { unit: 2, stage: 'judge' },
      ],
      skipped: 1,
    });
  });
});
