import { FAULT_KINDS } from '../../bench/chaos/faults';
import {
  HEARTBEAT_SECONDS,
  OLD_ATTEMPT_BUDGET,
  OPERATOR_WAIT_BOUND_MS,
  reportLines,
  runChaos,
} from '../../bench/chaos/suite';

/**
 * The short seeded chaos suite (`npm run chaos`'s defaults): two or more SPICE runs of 4 iterations on a stack
 * of its own (Temporal on SQLite, MinIO, the scripted LLM with faults, the recording trainer, a worker process
 * per pool) while every fault kind is injected once: each pool's worker, Temporal, MinIO and the trainer
 * SIGKILLed and restarted; storage, inference and the trainer held down past the old retry budget; Temporal
 * held down past the heartbeat timeout; a shard output, a training batch and a committed checkpoint (with the
 * trainer restarted without its weights, so that it restores) corrupted, and MinIO's size-capped drive filled,
 * the operator's repair and retry done as `selfplay retry` does. Needs root (or a user namespace) for that drive.
 */
test(
  'chaos: every run completes, no step applied twice, no iteration lost, outages past the old budget, corruption and a full disk wait for their operator',
  async () => {
    const temporalDownMs = 2 * HEARTBEAT_SECONDS * 1000;
    const report = await runChaos({
      seed: 1,
      faults: FAULT_KINDS.length,
      iterations: 4,
      holdCapMs: 60_000,
      temporalDownMs,
      deadlineMs: 12 * 60_000,
      log: () => undefined,
    });
    console.log(reportLines(report).join('\n'));
    for (const kind of FAULT_KINDS) expect(report.injected[kind]).toBe(1);
    // Each outage lasted past the attempts that used to fail the run, or Temporal's past the heartbeat timeout.
    expect(report.holds.map((h) => h.kind).sort()).toEqual([
      'hold-inference',
      'hold-storage',
      'hold-temporal',
      'hold-trainer',
    ]);
    for (const hold of report.holds) {
      if (hold.kind === 'hold-temporal') expect(hold.heldS).toBeGreaterThan(HEARTBEAT_SECONDS);
      else expect(hold.maxAttempts).toBeGreaterThan(OLD_ATTEMPT_BUDGET);
    }
    // A corrupted object is no outage: the run waits for its operator, naming the corruption, within the bound;
    // a checkpoint's when the trainer restarted without its weights restores from it.
    expect(report.corruptions.map((c) => c.kind).sort()).toEqual([
      'corrupt-batch',
      'corrupt-checkpoint',
      'corrupt-shard',
    ]);
    for (const c of report.corruptions) {
      expect(c.cause?.type).toBe('CorruptData');
      expect(c.waitedS).toBeLessThan(OPERATOR_WAIT_BOUND_MS / 1000);
      if (c.kind !== 'corrupt-batch') expect(c.cause?.message).toContain(c.key);
      expect(c.status).toMatch(/^needs operator: iteration \d+ failed \(CorruptData\): /);
    }
    // A full drive (MinIO's on its capped tmpfs) is no outage either: StorageFull, and status says what to do.
    expect(report.diskFills).toHaveLength(1);
    for (const f of report.diskFills) {
      expect(f.cause?.type).toBe('StorageFull');
      expect(f.waitedS).toBeLessThan(OPERATOR_WAIT_BOUND_MS / 1000);
      expect(f.status).toMatch(
        /^needs operator: iteration \d+ failed \(StorageFull\): storage full: free space or raise the retention, then `selfplay retry RUN` \(.*XMinioStorageFull/,
      );
    }
    // Every healed fault was followed by progress, its time to recover measured.
    expect(report.recoveries).toHaveLength(FAULT_KINDS.length);
    for (const r of report.recoveries)
      expect({ kind: r.kind, seen: r.recoverS !== undefined }).toEqual({
        kind: r.kind,
        seen: true,
      });
    expect(report.runsStarted).toBeGreaterThanOrEqual(1);
    expect(report.runsCompleted).toBe(report.runsStarted);
    expect(report.stepsAppliedTwice).toBe(0);
    expect(report.iterationsLost).toBe(0);
  },
  15 * 60_000,
);
