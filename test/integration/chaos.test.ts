import { FAULT_KINDS } from '../../bench/chaos/faults';
import { OLD_ATTEMPT_BUDGET, reportLines, runChaos } from '../../bench/chaos/suite';

/**
 * The short seeded chaos suite (`npm run chaos`'s defaults): two or more SPICE runs of 4 iterations on a stack
 * of its own (Temporal on SQLite, MinIO, the scripted LLM with faults, the recording trainer, a worker process
 * per pool) while every fault kind is injected once: each pool's worker, Temporal, MinIO and the trainer
 * SIGKILLed and restarted, and storage, inference and the trainer held down past the old retry budget.
 */
test(
  'chaos: every run completes, no step applied twice, no iteration lost, outages past the old budget',
  async () => {
    const report = await runChaos({
      seed: 1,
      faults: FAULT_KINDS.length,
      iterations: 4,
      holdCapMs: 60_000,
      deadlineMs: 12 * 60_000,
      log: () => undefined,
    });
    console.log(reportLines(report).join('\n'));
    for (const kind of FAULT_KINDS) expect(report.injected[kind]).toBe(1);
    // Each outage lasted past the attempts that used to fail the run.
    expect(report.holds.map((h) => h.kind).sort()).toEqual([
      'hold-inference',
      'hold-storage',
      'hold-trainer',
    ]);
    for (const hold of report.holds) expect(hold.maxAttempts).toBeGreaterThan(OLD_ATTEMPT_BUDGET);
    expect(report.runsStarted).toBeGreaterThanOrEqual(1);
    expect(report.runsCompleted).toBe(report.runsStarted);
    expect(report.stepsAppliedTwice).toBe(0);
    expect(report.iterationsLost).toBe(0);
  },
  15 * 60_000,
);
