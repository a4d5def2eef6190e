import { Client, Connection, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { S3Store } from '../../activities/clients/storage';
import { getJson } from '../../activities/clients/storage/codec';
import { latestKey } from '../../activities/clients/storage/keys';
import { delay } from '../../activities/lib/backoff';
import { selfPlayRun } from '../../workflows';
import type { Pool } from '../../workers/pools';
import type { RecordingTrainerStats } from '../../test/support/recording-trainer/server';
import { iterationsLost, objectVersions, stepsAppliedTwice, unitsRecomputed, type AuditedRun } from './audit';
import { corruptCheckpointAndRepair } from './checkpoint-corruption';
import { corruptAndRepair, type CorruptionContext } from './corruption';
import { fillDiskAndRepair } from './disk';
import { FAULT_KINDS, faultPlan, type FaultKind, type PlannedFault } from './faults';
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
  injected: Record<FaultKind, number>;
  holds: HoldRecord[];
  corruptions: OperatorWaitRecord[];
  diskFills: OperatorWaitRecord[];
  recoveries: RecoveryRecord[];
  runsStarted: number;
  runsCompleted: number;
  /** Worker processes that exited on their own (e.g. while Temporal was down) and were started again. */
  workerRestarts: number;
  stepsAppliedTwice: number;
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
  if (options.temporalDownMs <= HEARTBEAT_SECONDS * 1000) {
    throw new Error(
      `temporalDownMs (--temporal-down-s): ${options.temporalDownMs / 1000} s does not outlast the runs' ` +
        `heartbeat timeout of ${HEARTBEAT_SECONDS} s; give more`,
    );
  }
  const deadline = Date.now() + options.deadlineMs;
  const stack = await startChaosStack(seed, log);
  const connection = await Connection.connect({ address: stack.temporal.address });
  const client = new Client({ connection, dataConverter: dataConverterFromEnv() });
  const runs: Array<AuditedRun & { completed: boolean }> = [];
  const injected = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
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
      // A start whose answer was lost to a Temporal crash may have started the run: that is a start too.
      await persistently(() =>
        client.workflow
          .start(selfPlayRun, {
            workflowId: runId,
            taskQueue: stack.queues.orchestrator,
            args: [chaosRunConfig(runId, iterations, stack)],
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
   * A kill or hold: down, then restarted; a corruption or a full disk: injected, waited on, repaired and
   * retried.
   */
  const inject = async ({ kind, downMs }: PlannedFault): Promise<void> => {
    if (kind === 'corrupt-shard' || kind === 'corrupt-batch') {
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
      for (const fault of faultPlan(seed, options.faults)) {
        await delay(fault.gapMs);
        await inject(fault);
        injected[fault.kind]++;
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
    const trainer = (await (await fetch(`${stack.trainerUrl}/admin/stats`)).json()) as RecordingTrainerStats;
    return {
      seed,
      iterations,
      injected,
      holds,
      corruptions,
      diskFills,
      recoveries,
      runsStarted: runs.length,
      runsCompleted: runs.filter((r) => r.completed).length,
      workerRestarts: Object.values(stack.workers).reduce((sum, w) => sum + w.restarts, 0),
      stepsAppliedTwice: stepsAppliedTwice(trainer.appliedByKey),
      iterationsLost: iterationsLost(runs, versions, trainer.steps),
      unitsRecomputed: unitsRecomputed(versions),
    };
  } finally {
    await connection.close();
    await stack.close();
  }
}

/**
 * A small SPICE run (B=8 in two shards, G=4) that continues-as-new every 2 iterations, with the retry
 * backoff and the heartbeat timeout scaled down, inference retries kept short, and no attempt cap.
 */
function chaosRunConfig(runId: string, iterations: number, stack: ChaosStack): Record<string, unknown> {
  return {
    recipe: 'spice',
    iterations,
    batchSize: 8,
    shardSize: 4,
    groupSize: 4,
    continueAsNewEvery: 2,
    sampling: { maxTokens: 2048 },
    pools: stack.queues,
    training: { policy: runId },
    inference: { requestTimeoutSeconds: 5, maxRetries: 1 },
    timeouts: { heartbeatSeconds: HEARTBEAT_SECONDS, retryInitialSeconds: 0.2, retryMaxSeconds: 1 },
  };
}

/**
 * The suite's figures: per fault kind how many were injected, the holds, the corruptions and full disks (each
 * with the cause `selfplay status` showed), the time to recover per kind, then one `name value` per line.
 */
export function reportLines(r: ChaosReport): string[] {
  const total = Object.values(r.injected).reduce((a, b) => a + b, 0);
  return [
    `chaos seed ${r.seed}: ${total} faults on ${r.runsStarted} run(s) of ${r.iterations} iterations`,
    ...FAULT_KINDS.map((kind) => `fault ${kind} ${r.injected[kind]}`),
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
    ...FAULT_KINDS.flatMap((kind) => recoveryLine(kind, r.recoveries)),
    `chaos_worker_restarts ${r.workerRestarts}`,
    `chaos_runs_started ${r.runsStarted}`,
    `chaos_runs_completed ${r.runsCompleted}`,
    `chaos_steps_applied_twice ${r.stepsAppliedTwice}`,
    `chaos_iterations_lost ${r.iterationsLost}`,
    `chaos_units_recomputed ${r.unitsRecomputed}`,
  ];
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
