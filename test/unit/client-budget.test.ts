import {
  clientBudget,
  longestLength,
  permitsPerBusySlot,
  worstRequestSeconds,
} from '../../bench/client-budget';
import { completionLatency, DEFAULT_CONFIG } from '../support/scripted-llm/config';

const logNormal =
  (sigma: number) =>
  (u1: number, u2: number): number =>
    completionLatency({ ...DEFAULT_CONFIG, latencyMs: 1, latencyTail: sigma }, 'solve', u1, u2);

describe('the bench client budget for long tails', () => {
  test('without a tail a request frees its permits when its slots free: one permit per busy slot', () => {
    expect(permitsPerBusySlot(() => 1, 8)).toBe(1);
    expect(clientBudget(64, 1)).toBe(128);
  });

  test('a request of 8 choices holds its permits until its longest ends: about 3 per busy slot at σ = 1', () => {
    const permits = permitsPerBusySlot(logNormal(1), 8);
    // E[max of 8] / E[one] for a log-normal of σ 1 capped at 20: 3.06 over 200,000 random requests.
    expect(permits).toBeGreaterThan(2.9);
    expect(permits).toBeLessThan(3.2);
    // Seeded: the same on every machine.
    expect(permitsPerBusySlot(logNormal(1), 8)).toBe(permits);
    // Heavier tails, or more choices per request, hold more.
    expect(permitsPerBusySlot(logNormal(1.5), 8)).toBeGreaterThan(permits);
    expect(permitsPerBusySlot(logNormal(1), 4)).toBeLessThan(permits);
    expect(permitsPerBusySlot(logNormal(1), 1)).toBe(1);
    expect(clientBudget(64, permits)).toBe(Math.ceil(64 * (permits + 1)));
  });

  test('the longest completion is the server cap for a log-normal and the largest bin for a histogram', () => {
    expect(longestLength(logNormal(1))).toBe(20);
    const histogram = (u1: number, u2: number): number =>
      completionLatency(
        {
          ...DEFAULT_CONFIG,
          latencyMs: 1,
          lengths: [
            { tokens: 100, count: 5 },
            { tokens: 200, count: 4 },
            { tokens: 1600, count: 1 },
          ],
        },
        'solve',
        u1,
        u2,
      );
    expect(longestLength(histogram)).toBe(16);
  });

  test('a request waits behind the rest of the budget spread over the slots, then two longest lengths', () => {
    expect(worstRequestSeconds(261, 64, 8, 20)).toBeCloseTo((253 / 64 + 2) * 20, 9);
  });
});
