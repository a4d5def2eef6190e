import { Client, Connection, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { S3Store } from '../../activities/clients/storage';
import { getJson } from '../../activities/clients/storage/codec';
import { latestKey } from '../../activities/clients/storage/keys';
import { delay } from '../../activities/lib/backoff';
import { selfPlayRun } from '../../workflows';
import type { Pool } from '../../workers/pools';
import type { RecordingTrainerStats } from '../../test/support/recording-trainer/server';
import { survivingSteps } from '../../test/support/recording-trainer/state';
import { iterationsLost, objectVersions, stepsAppliedTwice, unitsRecomputed, type AuditedRun } from './audit';
import { corruptCheckpointAndRepair } from './checkpoint-corruption';
import { corruptAndRepair, type CorruptionContext } from './corruption';
import { fillDiskAndRepair } from './disk';
import { faultKinds, faultPlan, type ChaosTrainer, type FaultKind, type PlannedFault } from './faults';
import { checkAgainstReplay, type KernelFault, type ReplayCheck } from './kernel';
import { miniBatchedSpice } from '../../test/support/kernel-run';
import { operatorWaitLine, type OperatorWaitRecord } from './operator';
import { startChaosStack, type ChaosStack } from './stack';
import { dataConverterFromEnv } from '../../config/payload-codec';

/** The attempts an activity got before this release: an outage that outlasted them failed the run. */
export const OLD_ATTEMPT_BUDGET = 10;

/** The runs' heartbeat timeout: a `hold-temporal` outage must outlast it (chaosRunConfig). */
export const HEARTBEAT_SECONDS = 5;

/**
 * How long a run may take to wait for its operator once a fault no retry heals has taken effect: the reader of a
 * corrupted object is back, or MinIO's drive is full.
 */
export const OPERATOR_WAIT_BOUND_MS = 60_000;

/**
 * Past this without progress after a healed fault, its recovery is recorded as not seen. Generous: a 3 s
 * Temporal kill took 21-76 s to the next write on a loaded 2-core machine (workers' pollers back off while the
 * server is away), and the CI test fails on a recovery not seen.
 */
const RECOVERY_CAP_MS = 300_000;

export interface ChaosOptions {
  seed: number;
  /** Faults to inject; runs of `iterations` are started one after another until every fault is injected. */
  faults: number;
  iterations: number;
  /** A hold ends once an activity has failed more attempts than the old budget, or after this long. */
  holdCapMs: number;
  /** When given, `hold-storage` keeps storage down this long (the long version: 15 minutes) instead. */
  storageDownMs?: number;
  /** How long `hold-temporal` keeps the Temporal server down: more than the heartbeat timeout. */
  temporalDownMs: number;
  /** Past this, the suite stops waiting: runs not completed by then count as not completed. */
  deadlineMs: number;
  /** What trains the runs (default: the recording trainer). */
  trainer?: ChaosTrainer;
  log: (line: string) => void;
}

export interface HoldRecord {
  kind: FaultKind;
  heldS: number;
  /**
   * The most attempts a pending activity of the run had reached when the hold ended; undefined for a hold of
   * fixed length, which does not count them.
   */
  maxAttempts: number | undefined;
}

/**
 * A healed fault: from the part's restart (a corruption or a full disk: the operator's retry) to the run's next
 * progress.
 */
export interface RecoveryRecord {
  kind: FaultKind;
  /** Undefined when no progress came within RECOVERY_CAP_MS. */
  recoverS: number | undefined;
}

export interface ChaosReport {
  seed: number;
  iterations: number;
  trainer: ChaosTrainer;
  /** Per fault kind of the plan (faultKinds), how many were injected. */
  injected: Partial<Record<FaultKind, number>>;
  /** A kernel fault armed but taken by no step within the recovery cap (the runs had ended, say). */
  notFired: Partial<Record<FaultKind, number>>;
  /** With the kernel: each run's committed versions compared with a clean replay's weights. */
  weightChecks?: ReplayCheck[];
  holds: HoldRecord[];
  corruptions: OperatorWaitRecord[];
  diskFills: OperatorWaitRecord[];
  recoveries: RecoveryRecord[];
  runsStarted: number;
  runsCompleted: number;
  /** Worker processes that exited on their own (e.g. while Temporal was down) and were started again. */
  workerRestarts: number;
  stepsAppliedTwice: number;
  /** The recording trainer's step keys applied more than once, with how many times: what to look for. */
  repeatedSteps?: Record<string, number>;
  iterationsLost: number;
  unitsRecomputed: number;
}

const KILLED_POOL: Partial<Record<FaultKind, Pool>> = {
  'kill-orchestrator-worker': 'orchestrator',
  'kill-rollout-worker': 'rollout',
  'kill-trainer-worker': 'trainer',
};

/**
 * The chaos suite: multi-iteration SPICE runs on the local stack (stack.ts) while the faults of a seeded plan
 * (faults.ts) are injected one after another, then an audit of what storage and the trainer recorded
 * (audit.ts). The run config scales the retry backoff down (0.2 s to 1 s instead of 1 s to a minute) and
 * the heartbeat timeout (5 s), so the old budget of 10 attempts is spent in seconds and the suite takes
 * minutes. After each healed fault it times the recovery: from the part's restart to the next object any run
 * writes (a unit, a shard, a batch, a checkpoint, a commit), the first sign the runs go on.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const { seed, iterations, log } = options;
  const trainer = options.trainer ?? 'recording';
  const kinds = faultKinds(trainer);
  if (options.temporalDownMs <= HEARTBEAT_SECONDS * 1000) {
    throw new Error(
      `temporalDownMs (--temporal-down-s): ${options.temporalDownMs / 1000} s does not outlast the runs' ` +
        `heartbeat timeout of ${HEARTBEAT_SECONDS} s; give more`,
    );
  }
  const deadline = Date.now() + options.deadlineMs;
  const stack = await startChaosStack(seed, trainer, log);
  const connection = await Connection.connect({ address: stack.temporal.address });
  const client = new Client({ connection, dataConverter: dataConverterFromEnv() });
  const runs: Array<AuditedRun & { completed: boolean }> = [];
  const injected = Object.fromEntries(kinds.map((k) => [k, 0])) as Partial<Record<FaultKind, number>>;
  const notFired: Partial<Record<FaultKind, number>> = {};
  const holds: HoldRecord[] = [];
  const corruptions: OperatorWaitRecord[] = [];
  const diskFills: OperatorWaitRecord[] = [];
  const recoveries: RecoveryRecord[] = [];
  const store = new S3Store({ bucket: stack.minio.bucket, prefix: stack.storagePrefix, client: stack.s3 });
  const corruption: CorruptionContext = {
    client,
    store,
    readers: {
      'corrupt-shard': stack.workers.orchestrator,
      'corrupt-batch': stack.workers.trainer,
      'corrupt-checkpoint': stack.workers.trainer,
    },
    currentRun: () => runs.at(-1)?.runId,
    iterations,
    operatorBoundMs: OPERATOR_WAIT_BOUND_MS,
    deadline,
    log,
  };
  let injecting = true;

  /** Calls `fn` until it succeeds (Temporal may be down for a moment) or the deadline passes. */
  const persistently = async <T>(fn: () => Promise<T>): Promise<T> => {
    for (;;) {
      try {
        return await fn();
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await delay(1_000);
      }
    }
  };

  /** Starts runs one after another while faults are being injected; each is followed until it closes. */
  const drive = async (): Promise<void> => {
    do {
      const runId = `chaos-${seed}-run-${runs.length + 1}`;
      // A kernel holds one policy: each run trains its own on a fresh kernel.
      await stack.kernel?.process.serve(runId);
      // A start whose answer was lost to a Temporal crash may have started the run: that is a start too.
      await persistently(() =>
        client.workflow
          .start(selfPlayRun, {
            workflowId: runId,
            taskQueue: stack.queues.orchestrator,
            args: [chaosRunConfig(runId, iterations, stack.queues, trainer)],
          })
          .catch((err: unknown) => {
            if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
          }),
      );
      const run = { runId, upTo: 0, completed: false };
      runs.push(run);
      log(`run ${runId} started`);
      run.completed = (await closedStatus(runId)) === 'COMPLETED';
      log(`run ${runId} ${run.completed ? 'completed' : 'did not complete'}`);
    } while (injecting && Date.now() < deadline);
  };

  const closedStatus = async (runId: string): Promise<string> => {
    while (Date.now() < deadline) {
      const status = await client.workflow
        .getHandle(runId)
        .describe()
        .then((d) => d.status.name)
        .catch(() => 'RUNNING');
      if (status !== 'RUNNING') return status;
      await delay(1_000);
    }
    return 'RUNNING';
  };

  /** The most attempts any pending activity of the current run's open executions has reached. */
  const attemptsNow = async (): Promise<number> => {
    const runId = runs.at(-1)?.runId;
    if (!runId) return 0;
    let most = 0;
    for await (const e of client.workflow.list({
      query: `WorkflowId STARTS_WITH "${runId}" AND ExecutionStatus = 'Running'`,
    })) {
      const pending = (await client.workflow.getHandle(e.workflowId).describe()).raw.pendingActivities ?? [];
      for (const a of pending) most = Math.max(most, a.attempt ?? 0);
    }
    return most;
  };

  /** Holds an outage until an activity has failed more attempts than the old budget (or the cap). */
  const holdUntilPastBudget = async (kind: FaultKind): Promise<void> => {
    const started = Date.now();
    let maxAttempts = 0;
    while (Date.now() - started < options.holdCapMs && maxAttempts <= OLD_ATTEMPT_BUDGET) {
      await delay(500);
      maxAttempts = Math.max(maxAttempts, await attemptsNow().catch(() => 0));
    }
    holds.push({ kind, heldS: (Date.now() - started) / 1000, maxAttempts });
  };

  /** Keeps a part down for `ms` of wall time. */
  const holdFor = async (kind: FaultKind, ms: number): Promise<void> => {
    await delay(ms);
    holds.push({ kind, heldS: ms / 1000, maxAttempts: undefined });
  };

  /** Every object version the runs have written so far. */
  const writtenSoFar = async (): Promise<number> => {
    const versions = await persistently(() =>
      objectVersions(stack.s3, stack.minio.bucket, stack.storagePrefix),
    );
    return [...versions.values()].reduce((a, b) => a + b, 0);
  };

  /** Times from now (the part is back) to the next object a run writes. */
  const recordRecovery = async (kind: FaultKind): Promise<void> => {
    const since = Date.now();
    const before = await writtenSoFar();
    let recoverS: number | undefined;
    while (Date.now() - since < RECOVERY_CAP_MS && Date.now() < deadline) {
      if ((await writtenSoFar()) > before) {
        recoverS = (Date.now() - since) / 1000;
        break;
      }
      await delay(250);
    }
    recoveries.push({ kind, recoverS });
  };

  /** What a fault takes down, and how that part comes back. */
  const partHitBy = (kind: FaultKind): { down: () => Promise<void>; up: () => Promise<void> } => {
    const pool = KILLED_POOL[kind];
    if (pool) {
      const worker = stack.workers[pool];
      return { down: () => worker.kill(), up: () => Promise.resolve(worker.start()) };
    }
    if (kind === 'kill-temporal' || kind === 'hold-temporal')
      return { down: () => stack.temporal.stop('SIGKILL'), up: () => stack.temporal.restart() };
    if (kind === 'kill-minio' || kind === 'hold-storage')
      return { down: () => stack.minio.stop('SIGKILL'), up: () => stack.minio.restart() };
    if (kind === 'hold-inference') return { down: () => stack.llm.kill(), up: () => stack.llm.start() };
    return { down: () => stack.trainer.kill(), up: () => stack.trainer.start() };
  };

  /** How long a part stays down: a kill `downMs`, a hold past the old budget or its fixed length. */
  const outage = (kind: FaultKind, downMs: number): Promise<void> => {
    if (kind === 'hold-temporal') return holdFor(kind, options.temporalDownMs);
    if (kind === 'hold-storage' && options.storageDownMs !== undefined)
      return holdFor(kind, options.storageDownMs);
    if (kind.startsWith('hold-')) return holdUntilPastBudget(kind);
    return delay(downMs);
  };

  /**
   * A fault inside the kernel's next step: the mini-batch raises (the kernel heals itself), or the step is held
   * there and the kernel SIGKILLed and restarted.
   */
  const kernelFault = async (kind: FaultKind, fault: KernelFault): Promise<void> => {
    const kernel = stack.kernel?.process;
    if (!kernel) throw new Error(`${kind}: a kernel fault needs --trainer kernel`);
    if (!(await kernel.fire(fault, RECOVERY_CAP_MS))) {
      notFired[kind] = (notFired[kind] ?? 0) + 1;
      log(`fault ${kind}: no train step took it within ${RECOVERY_CAP_MS / 1000} s`);
      return;
    }
    if (fault === 'hold') {
      await kernel.kill();
      await kernel.start();
    }
  };

  /**
   * A kill or hold: down, then restarted; a corruption or a full disk: injected, waited on, repaired and
   * retried; a kernel fault: armed and, once taken, healed.
   */
  const inject = async ({ kind, downMs }: PlannedFault): Promise<void> => {
    if (kind === 'raise-mini-batch') {
      await kernelFault(kind, 'raise');
    } else if (kind === 'kill-kernel-mid-step') {
      await kernelFault(kind, 'hold');
    } else if (kind === 'corrupt-shard' || kind === 'corrupt-batch') {
      corruptions.push(await corruptAndRepair(kind, corruption));
    } else if (kind === 'corrupt-checkpoint') {
      corruptions.push(await corruptCheckpointAndRepair({ ...corruption, trainerUrl: stack.trainerUrl }));
    } else if (kind === 'fill-disk') {
      diskFills.push(await fillDiskAndRepair({ ...corruption, disk: stack.minioDisk }));
    } else {
      const part = partHitBy(kind);
      await part.down();
      await outage(kind, downMs);
      await part.up();
    }
    await recordRecovery(kind);
  };

  const injectAll = async (): Promise<void> => {
    try {
      for (const fault of faultPlan(seed, options.faults, undefined, kinds)) {
        await delay(fault.gapMs);
        await inject(fault);
        injected[fault.kind] = (injected[fault.kind] ?? 0) + 1;
        log(
          `fault ${fault.kind} injected (${Object.values(injected).reduce((a, b) => a + b)}/${options.faults})`,
        );
      }
    } finally {
      injecting = false;
    }
  };

  try {
    await Promise.all([drive(), injectAll()]);
    for (const run of runs) {
      const latest = await getJson<{ iteration: number }>(store, latestKey(run.runId));
      run.upTo = run.completed ? iterations : (latest?.iteration ?? 0);
    }
    const versions = await objectVersions(stack.s3, stack.minio.bucket, stack.storagePrefix);
    const audit = stack.kernel
      ? await kernelAudit(stack.kernel, runs, iterations, stack, store, log)
      : recordingAudit(
          (await (await fetch(`${stack.trainerUrl}/admin/stats`)).json()) as RecordingTrainerStats,
        );
    return {
      seed,
      iterations,
      trainer,
      injected,
      notFired,
      holds,
      corruptions,
      diskFills,
      recoveries,
      runsStarted: runs.length,
      runsCompleted: runs.filter((r) => r.completed).length,
      workerRestarts: Object.values(stack.workers).reduce((sum, w) => sum + w.restarts, 0),
      stepsAppliedTwice: audit.stepsAppliedTwice,
      ...(audit.repeatedSteps ? { repeatedSteps: audit.repeatedSteps } : {}),
      ...(audit.weightChecks ? { weightChecks: audit.weightChecks } : {}),
      iterationsLost: iterationsLost(runs, versions, audit.steps),
      unitsRecomputed: unitsRecomputed(versions),
    };
  } finally {
    await connection.close();
    await stack.close();
  }
}

/** What the trainer's side of the audit found: steps applied twice, and each run's applied steps. */
interface TrainerAudit {
  stepsAppliedTwice: number;
  repeatedSteps?: Record<string, number>;
  steps: ReadonlyArray<{ runId: string; iteration: number }>;
  weightChecks?: ReplayCheck[];
}

/**
 * The recording trainer counts every application of each step's idempotency key that survives in its weights.
 * One that a restore rolled back is not counted: a step the trainer applied for a pool the suite had just killed
 * is lost with the weights when it forgets them, as a kernel's restart loses it, and applied again on the
 * restored checkpoint; that is once, not twice.
 */
function recordingAudit(stats: RecordingTrainerStats): TrainerAudit {
  const repeated = Object.entries(stats.survivingByKey).filter(([, n]) => n > 1);
  return {
    stepsAppliedTwice: stepsAppliedTwice(stats.survivingByKey),
    ...(repeated.length > 0 ? { repeatedSteps: Object.fromEntries(repeated) } : {}),
    steps: survivingSteps(stats.steps),
  };
}

/**
 * The kernel counts nothing that survives its kills: its weights are the record. Each run's committed versions
 * are compared with a clean replay's (kernel.ts); a version that differs is a step applied twice (or partly),
 * and an iteration's step counts as applied once when its manifest committed the iteration's version and its
 * weights equal the replay's.
 */
async function kernelAudit(
  kernel: NonNullable<ChaosStack['kernel']>,
  runs: readonly AuditedRun[],
  iterations: number,
  stack: ChaosStack,
  store: S3Store,
  log: (line: string) => void,
): Promise<TrainerAudit> {
  await kernel.process.kill();
  const weightChecks: ReplayCheck[] = [];
  for (const { runId, upTo } of runs.filter((r) => r.upTo > 0)) {
    const config = chaosRunConfig(runId, iterations, stack.queues, 'kernel');
    const check = await checkAgainstReplay(store, runId, config, upTo, kernel.model, kernel.env).catch(
      (err: unknown) => {
        log(`replay of ${runId} failed: ${err instanceof Error ? err.message : String(err)}`);
        return { runId, versions: upTo, equal: 0, equalIterations: [] };
      },
    );
    log(`replay of ${runId}: ${check.equal}/${check.versions} versions equal`);
    weightChecks.push(check);
  }
  return {
    stepsAppliedTwice: weightChecks.reduce((n, c) => n + c.versions - c.equal, 0),
    steps: weightChecks.flatMap((c) => c.equalIterations.map((iteration) => ({ runId: c.runId, iteration }))),
    weightChecks,
  };
}

/**
 * A small SPICE run (B=8 in two shards, G=4) that continues-as-new every 2 iterations, with the retry
 * backoff and the heartbeat timeout scaled down, inference retries kept short, and no attempt cap. On the
 * kernel, the tiny model's run of kernel-chaos.test.ts instead (B=3, one optimizer step per prompt, so a step
 * has a mini-batch 2 to fail in), sampled by the kernel under the run's policy name.
 */
export function chaosRunConfig(
  runId: string,
  iterations: number,
  queues: ChaosStack['queues'],
  trainer: ChaosTrainer,
): Record<string, unknown> {
  const common = {
    iterations,
    continueAsNewEvery: 2,
    pools: queues,
    timeouts: { heartbeatSeconds: HEARTBEAT_SECONDS, retryInitialSeconds: 0.2, retryMaxSeconds: 1 },
  };
  if (trainer === 'kernel') {
    const spice = miniBatchedSpice(runId);
    return {
      ...spice,
      // Every version kept: the audit compares each committed checkpoint with the replay's (retention's
      // default of 5 had deleted versions 1-5 of each run before the long run's audit could read them).
      training: { ...spice.training, retention: { keepLast: 'all' } },
      ...common,
      weightSync: { engine: 'kernel' },
      inference: { default: { model: '{policy}' }, requestTimeoutSeconds: 60, maxRetries: 1 },
    };
  }
  return {
    recipe: 'spice',
    batchSize: 8,
    shardSize: 4,
    groupSize: 4,
    sampling: { maxTokens: 2048 },
    training: { policy: runId },
    inference: { requestTimeoutSeconds: 5, maxRetries: 1 },
    ...common,
  };
}

/**
 * The suite's figures: per fault kind how many were injected, the holds, the corruptions and full disks (each
 * with the cause `selfplay status` showed), the time to recover per kind, then one `name value` per line.
 */
export function reportLines(r: ChaosReport): string[] {
  const total = Object.values(r.injected).reduce((a, b) => a + b, 0);
  const kinds = faultKinds(r.trainer);
  return [
    `chaos seed ${r.seed}: ${total} faults on ${r.runsStarted} run(s) of ${r.iterations} iterations ` +
      `(${r.trainer === 'kernel' ? 'the real kernel' : 'the recording trainer'})`,
    ...kinds.map((kind) => `fault ${kind} ${r.injected[kind] ?? 0}`),
    ...kinds.flatMap((kind) =>
      r.notFired[kind] ? [`fault ${kind}: ${r.notFired[kind]} armed but taken by no train step`] : [],
    ),
    ...r.holds.map(
      (h) =>
        `hold ${h.kind}: ${h.heldS.toFixed(1)} s, ` +
        (h.maxAttempts === undefined
          ? 'fixed length'
          : `an activity at attempt ${h.maxAttempts} (old budget ${OLD_ATTEMPT_BUDGET})`),
    ),
    ...[...r.corruptions, ...r.diskFills].flatMap((w) => [
      operatorWaitLine(w, OPERATOR_WAIT_BOUND_MS),
      ...(w.status ? [`  selfplay status: ${w.status}`] : []),
    ]),
    ...kinds.flatMap((kind) => recoveryLine(kind, r.recoveries)),
    `chaos_worker_restarts ${r.workerRestarts}`,
    `chaos_runs_started ${r.runsStarted}`,
    `chaos_runs_completed ${r.runsCompleted}`,
    ...Object.entries(r.repeatedSteps ?? {}).map(([key, n]) => `step applied ${n} times: ${key}`),
    `chaos_steps_applied_twice ${r.stepsAppliedTwice}`,
    `chaos_iterations_lost ${r.iterationsLost}`,
    `chaos_units_recomputed ${r.unitsRecomputed}`,
    ...(r.weightChecks ? [weightsLine(r.weightChecks)] : []),
  ];
}

/** `weights_equal_replay k/n`: the runs every committed version of which equals a clean replay's weights. */
function weightsLine(checks: readonly ReplayCheck[]): string {
  const equal = checks.filter((c) => c.equal === c.versions).length;
  const versions = checks.reduce((n, c) => n + c.versions, 0);
  const equalVersions = checks.reduce((n, c) => n + c.equal, 0);
  return `weights_equal_replay ${equal}/${checks.length} (versions ${equalVersions}/${versions})`;
}

/** `recover KIND: n healed, median M s, max X s` (and how many showed no progress), or nothing if none. */
function recoveryLine(kind: FaultKind, recoveries: readonly RecoveryRecord[]): string[] {
  const ofKind = recoveries.filter((r) => r.kind === kind);
  if (ofKind.length === 0) return [];
  const seconds = ofKind.flatMap((r) => (r.recoverS === undefined ? [] : [r.recoverS])).sort((a, b) => a - b);
  const unseen = ofKind.length - seconds.length;
  const figures =
    seconds.length === 0
      ? 'no progress seen'
      : `median ${(seconds[Math.floor((seconds.length - 1) / 2)] ?? 0).toFixed(1)} s, max ${(seconds.at(-1) ?? 0).toFixed(1)} s`;
  const without = unseen > 0 ? `, ${unseen} without progress in ${RECOVERY_CAP_MS / 1000} s` : '';
  return [`recover ${kind}: ${ofKind.length} healed, ${figures}${without}`];
}
