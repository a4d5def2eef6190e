import { Client, Connection, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { S3Store } from '../../activities/clients/storage';
import { getJson } from '../../activities/clients/storage/codec';
import { latestKey } from '../../activities/clients/storage/keys';
import { delay } from '../../activities/lib/backoff';
import { selfPlayRun } from '../../workflows';
import type { Pool } from '../../workers/pools';
import type { RecordingTrainerStats } from '../../test/support/recording-trainer/server';
import { iterationsLost, objectVersions, stepsAppliedTwice, unitsRecomputed, type AuditedRun } from './audit';
import { FAULT_KINDS, faultPlan, type FaultKind, type PlannedFault } from './faults';
import { startChaosStack, type ChaosStack } from './stack';
import { dataConverterFromEnv } from '../../config/payload-codec';

/** The attempts an activity got before this release: an outage that outlasted them failed the run. */
export const OLD_ATTEMPT_BUDGET = 10;

export interface ChaosOptions {
  seed: number;
  /** Faults to inject; runs of `iterations` are started one after another until every fault is injected. */
  faults: number;
  iterations: number;
  /** A hold ends once an activity has failed more attempts than the old budget, or after this long. */
  holdCapMs: number;
  /** Past this, the suite stops waiting: runs not completed by then count as not completed. */
  deadlineMs: number;
  log: (line: string) => void;
}

export interface HoldRecord {
  kind: FaultKind;
  heldS: number;
  /** The most attempts a pending activity of the run had reached when the hold ended. */
  maxAttempts: number;
}

export interface ChaosReport {
  seed: number;
  iterations: number;
  injected: Record<FaultKind, number>;
  holds: HoldRecord[];
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
 * minutes.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const { seed, iterations, log } = options;
  const deadline = Date.now() + options.deadlineMs;
  const stack = await startChaosStack(seed);
  const connection = await Connection.connect({ address: stack.temporal.address });
  const client = new Client({ connection, dataConverter: dataConverterFromEnv() });
  const runs: Array<AuditedRun & { completed: boolean }> = [];
  const injected = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  const holds: HoldRecord[] = [];
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

  /** What a fault takes down, and how that part comes back. */
  const partHitBy = (kind: FaultKind): { down: () => Promise<void>; up: () => Promise<void> } => {
    const pool = KILLED_POOL[kind];
    if (pool) {
      const worker = stack.workers[pool];
      return { down: () => worker.kill(), up: () => Promise.resolve(worker.start()) };
    }
    if (kind === 'kill-temporal')
      return { down: () => stack.temporal.stop('SIGKILL'), up: () => stack.temporal.restart() };
    if (kind === 'kill-minio' || kind === 'hold-storage')
      return { down: () => stack.minio.stop('SIGKILL'), up: () => stack.minio.restart() };
    if (kind === 'hold-inference') return { down: () => stack.llm.kill(), up: () => stack.llm.start() };
    return { down: () => stack.trainer.kill(), up: () => stack.trainer.start() };
  };

  /** A kill: down for `downMs`, then restarted. A hold: down until past the old budget. */
  const inject = async ({ kind, downMs }: PlannedFault): Promise<void> => {
    const part = partHitBy(kind);
    await part.down();
    if (kind.startsWith('hold-')) await holdUntilPastBudget(kind);
    else await delay(downMs);
    await part.up();
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
    const store = new S3Store({ bucket: stack.minio.bucket, prefix: stack.storagePrefix, client: stack.s3 });
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
    timeouts: { heartbeatSeconds: 5, retryInitialSeconds: 0.2, retryMaxSeconds: 1 },
  };
}

/** The suite's figures: per fault kind how many were injected, the holds, then one `name value` per line. */
export function reportLines(r: ChaosReport): string[] {
  const total = Object.values(r.injected).reduce((a, b) => a + b, 0);
  return [
    `chaos seed ${r.seed}: ${total} faults on ${r.runsStarted} run(s) of ${r.iterations} iterations`,
    ...FAULT_KINDS.map((kind) => `fault ${kind} ${r.injected[kind]}`),
    ...r.holds.map(
      (h) =>
        `hold ${h.kind}: ${h.heldS.toFixed(1)} s, an activity at attempt ${h.maxAttempts} (old budget ${OLD_ATTEMPT_BUDGET})`,
    ),
    `chaos_worker_restarts ${r.workerRestarts}`,
    `chaos_runs_started ${r.runsStarted}`,
    `chaos_runs_completed ${r.runsCompleted}`,
    `chaos_steps_applied_twice ${r.stepsAppliedTwice}`,
    `chaos_iterations_lost ${r.iterationsLost}`,
    `chaos_units_recomputed ${r.unitsRecomputed}`,
  ];
}
