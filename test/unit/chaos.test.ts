import { manifestKey, unitKey, unitPartKey } from '../../activities/clients/storage/keys';
import { iterationsLost, stepsAppliedTwice, unitsRecomputed } from '../../bench/chaos/audit';
import { stopPoolAtCommit, type CommitProbe } from '../../bench/chaos/checkpoint-corruption';
import {
  FAULT_KINDS,
  KERNEL_FAULT_KINDS,
  faultKinds,
  faultPlan,
  type FaultKind,
} from '../../bench/chaos/faults';
import { retryUntilCommitted, type RetryWatch } from '../../bench/chaos/disk';
import { chaosRunConfig, reportLines, type ChaosReport } from '../../bench/chaos/suite';
import { resolveRunConfig } from '../../config/schema';
import { queueNames } from '../../workers/pools';
import type { RunProgress } from '../../workflows/messages';

describe('chaos suite', () => {
  test('a seed gives one plan; every kind comes once per round, so the short plan has each kind', () => {
    const plan = faultPlan(1, FAULT_KINDS.length);
    expect(faultPlan(1, FAULT_KINDS.length)).toEqual(plan);
    expect(faultPlan(2, FAULT_KINDS.length)).not.toEqual(plan);
    expect(plan.map((f) => f.kind).sort()).toEqual([...FAULT_KINDS].sort());
    const long = faultPlan(7, 5 * FAULT_KINDS.length);
    for (const kind of FAULT_KINDS) expect(long.filter((f) => f.kind === kind)).toHaveLength(5);
    for (const f of long) {
      expect(f.gapMs).toBeGreaterThanOrEqual(1_000);
      expect(f.gapMs).toBeLessThanOrEqual(6_000);
      expect(f.downMs).toBeGreaterThanOrEqual(300);
      expect(f.downMs).toBeLessThanOrEqual(3_000);
    }
  });

  test('the report: fixed-length holds, each corruption and full disk with its cause, the time to recover per fault kind', () => {
    const injected = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
    const report: ChaosReport = {
      seed: 1,
      iterations: 4,
      trainer: 'recording',
      notFired: {},
      injected: { ...injected, 'kill-minio': 3, 'hold-temporal': 1, 'corrupt-shard': 1 },
      holds: [{ kind: 'hold-temporal', heldS: 10, maxAttempts: undefined }],
      corruptions: [
        {
          kind: 'corrupt-shard',
          key: 'runs/r/iter-000002/judge/shard-0000.jsonl.gz',
          waitedS: 4.25,
          cause: { iteration: 2, type: 'CorruptData', message: 'not valid gzip' },
          status: 'needs operator: iteration 2 failed (CorruptData): not valid gzip',
        },
      ],
      diskFills: [
        {
          kind: 'fill-disk',
          key: '/tmp/selfplay-chaos-1-x/minio',
          waitedS: 1.5,
          cause: { iteration: 3, type: 'StorageFull', message: 'storage full: free space' },
          status: 'needs operator: iteration 3 failed (StorageFull): storage full: free space',
          retries: 2,
        },
        {
          kind: 'fill-disk',
          key: '/tmp/d',
          waitedS: undefined,
          cause: undefined,
          status: undefined,
          lastSeen: 'r: running',
        },
      ],
      recoveries: [
        { kind: 'kill-minio', recoverS: 3 },
        { kind: 'kill-minio', recoverS: 1 },
        { kind: 'kill-minio', recoverS: undefined },
        { kind: 'hold-temporal', recoverS: 7.5 },
        { kind: 'corrupt-shard', recoverS: 2 },
      ],
      runsStarted: 1,
      runsCompleted: 1,
      workerRestarts: 0,
      stepsAppliedTwice: 1,
      repeatedSteps: { 'r/iter-000002/train/r': 2 },
      iterationsLost: 1,
      unitsRecomputed: 0,
    };
    const lines = reportLines(report);
    // A step applied twice names its key beside the count, so a failing run says where to look.
    expect(lines.slice(lines.indexOf('step applied 2 times: r/iter-000002/train/r'))[1]).toBe(
      'chaos_steps_applied_twice 1',
    );
    expect(lines).toContain('hold hold-temporal: 10.0 s, fixed length');
    expect(lines).toContain(
      'corrupt-shard runs/r/iter-000002/judge/shard-0000.jsonl.gz: waited for its operator after 4.3 s, cause CorruptData',
    );
    // A full disk as a corruption, each followed by the cause as `selfplay status` showed it.
    const fill = lines.indexOf(
      'fill-disk /tmp/selfplay-chaos-1-x/minio: waited for its operator after 1.5 s, cause StorageFull, retried 2 times',
    );
    expect(lines.slice(fill + 1, fill + 3)).toEqual([
      '  selfplay status: needs operator: iteration 3 failed (StorageFull): storage full: free space',
      // One that did not wait names what the suite last saw of the run, to tell a missed wait from none.
      'fill-disk /tmp/d: no operator wait within 60 s (last seen: r: running)',
    ]);
    expect(lines.filter((l) => l.startsWith('recover '))).toEqual([
      'recover kill-minio: 3 healed, median 1.0 s, max 3.0 s, 1 without progress in 300 s',
      'recover hold-temporal: 1 healed, median 7.5 s, max 7.5 s',
      'recover corrupt-shard: 1 healed, median 2.0 s, max 2.0 s',
    ]);
  });

  test('on the kernel: its two faults in the plan, the kinds it cannot take left out, the weights compared per run', () => {
    const kinds = faultKinds('kernel');
    expect(kinds).toEqual(expect.arrayContaining([...KERNEL_FAULT_KINDS]));
    expect(kinds).not.toContain('hold-inference');
    expect(kinds).not.toContain('corrupt-checkpoint');
    const plan = faultPlan(3, kinds.length, undefined, kinds);
    expect(plan.map((f) => f.kind).sort()).toEqual([...kinds].sort());
    const lines = reportLines({
      seed: 3,
      iterations: 3,
      trainer: 'kernel',
      injected: { 'raise-mini-batch': 1, 'kill-kernel-mid-step': 1 },
      notFired: { 'kill-kernel-mid-step': 1 },
      weightChecks: [
        { runId: 'a', versions: 3, equal: 3, equalIterations: [1, 2, 3] },
        { runId: 'b', versions: 2, equal: 1, equalIterations: [1] },
      ],
      holds: [],
      corruptions: [],
      diskFills: [],
      recoveries: [{ kind: 'raise-mini-batch', recoverS: 4 }],
      runsStarted: 2,
      runsCompleted: 2,
      workerRestarts: 0,
      stepsAppliedTwice: 1,
      iterationsLost: 1,
      unitsRecomputed: 0,
    });
    expect(lines[0]).toBe('chaos seed 3: 2 faults on 2 run(s) of 3 iterations (the real kernel)');
    expect(lines).toContain('fault raise-mini-batch 1');
    expect(lines).toContain('fault kill-minio 0');
    expect(lines).not.toContain('fault hold-inference 0');
    expect(lines).toContain('fault kill-kernel-mid-step: 1 armed but taken by no train step');
    expect(lines).toContain('recover raise-mini-batch: 1 healed, median 4.0 s, max 4.0 s');
    expect(lines.at(-1)).toBe('weights_equal_replay 1/2 (versions 4/5)');
  });

  test('on the kernel: every run keeps each version, so the audit has every committed checkpoint to compare', () => {
    // The long run of seed 12: retention's default deleted versions 1-5 of each run before the audit read them.
    const config = resolveRunConfig(chaosRunConfig('chaos-1-run-1', 10, queueNames('chaos'), 'kernel'));
    expect(config.ok && config.config.training.retention.keepLast).toBe('all');
  });

  test.each([
    {
      refusals: 2,
      maxRetries: 5,
      state: 'running',
      lastLog: 'fill-disk: the run waits on a full disk again after retry 2; retrying',
    },
    {
      refusals: 10,
      maxRetries: 3,
      state: 'needsOperator',
      lastLog: 'fill-disk: the run still waits on a full disk after 3 retries',
    },
  ])(
    'fill-disk: the operator retries while the run waits on the full disk again, at most maxRetries times (refused $refusals times)',
    async ({ refusals, maxRetries, state, lastLog }) => {
      const run = new RunRefusedWrites(refusals);
      const log: string[] = [];
      const deadline = Date.now() + 5_000;
      const retries = await retryUntilCommitted(run.watch, 5, {
        maxRetries,
        deadline,
        log: (l) => log.push(l),
      });
      expect(retries).toBe(Math.min(refusals + 1, maxRetries));
      expect(run.progressNow().state).toBe(state);
      expect(run.progressNow().lastCommitted).toBe(state === 'running' ? 5 : 4);
      expect(log.at(-1)).toBe(lastLog);
    },
  );

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

  test('corrupt-checkpoint: a pool kill that lands after an update applied its step lets the pool commit it, then stops the pool at the commit', async () => {
    // Seed 11's long run, 18:30: the kill caught run 6's update after the trainer applied step 8 and before
    // the commit; waiting for the commit with the pool stopped (restarted for 1 s, too short to boot) held the
    // suite until its deadline.
    const world = new TrainerPoolWithUpdateInFlight(1_500);
    const version = await stopPoolAtCommit(world, world.probe, Date.now() + 8_000);
    expect(version).toBe(8);
    expect(world.running).toBe(false);
    expect(world.committed).toBe(8);
  }, 15_000);
});

/**
 * The run at committed version 7 with its iteration-8 update in flight on the trainer pool: the first kill lands
 * after the trainer applied the step (version 8) and before the commit, which follows once the pool has run
 * `commitAfterMs` again (a worker's boot, then the update's retry).
 */
class TrainerPoolWithUpdateInFlight {
  committed = 7;
  trainer = 7;
  running = true;
  private retry: NodeJS.Timeout | undefined;
  readonly probe: CommitProbe = {
    committedVersion: () => Promise.resolve(this.committed),
    trainerVersion: () => Promise.resolve(this.trainer),
  };
  constructor(private readonly commitAfterMs: number) {}

  kill(): Promise<void> {
    if (this.running && this.trainer === this.committed && this.committed === 7) this.trainer = 8;
    this.running = false;
    clearTimeout(this.retry);
    return Promise.resolve();
  }

  start(): void {
    this.running = true;
    this.retry = setTimeout(() => (this.committed = this.trainer), this.commitAfterMs);
    this.retry.unref();
  }
}

/**
 * A run at committed iteration 4 waiting on a full disk, whose retried iteration 5 is refused again
 * `refusals` times (storage still answering full) before it commits.
 */
class RunRefusedWrites {
  private lastCommitted = 4;
  private failed = true;
  constructor(private refusals: number) {}

  progressNow(): Pick<RunProgress, 'state' | 'lastCommitted' | 'failure'> {
    return this.failed
      ? {
          state: 'needsOperator',
          lastCommitted: this.lastCommitted,
          failure: { iteration: 5, type: 'StorageFull', message: 'storage full' },
        }
      : { state: 'running', lastCommitted: this.lastCommitted };
  }

  readonly watch: RetryWatch = {
    progress: () => Promise.resolve(this.progressNow() as RunProgress),
    repair: () => {
      if (this.refusals > 0) this.refusals--;
      else {
        this.failed = false;
        this.lastCommitted = 5;
      }
      return Promise.resolve();
    },
  };
}
