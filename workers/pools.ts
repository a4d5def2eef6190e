import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';
import { heartbeatClock } from '../activities/lib/heartbeat';
import { failureEdge } from '../activities/lib/stuck';
import { dataConverterFromEnv } from '../config/payload-codec';

export const POOLS = ['orchestrator', 'rollout', 'trainer'] as const;
export type Pool = (typeof POOLS)[number];

/** Task queue names: `{prefix}-orchestrator` etc. They must match the run config's `pools` (same defaults). */
export function queueNames(prefix = 'selfplay'): Record<Pool, string> {
  return {
    orchestrator: `${prefix}-orchestrator`,
    rollout: `${prefix}-rollout`,
    trainer: `${prefix}-trainer`,
  };
}

export interface PoolWorkersOptions {
  connection: NativeConnection;
  namespace: string;
  pools: readonly Pool[];
  queues: Record<Pool, string>;
  deps: ActivityDeps;
  /** A prebuilt workflow bundle (production, tests); otherwise the workflows are bundled at start. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Concurrent activities per pool: rollout shards are I/O-bound, a trainer applies one step at a time. */
  slots?: Partial<Record<Pool, number>>;
  identity?: string;
  /** Default: the payload codec of SELFPLAY_CODEC_KEYS (config/payload-codec.ts), so every worker encrypts alike. */
  dataConverter?: WorkerOptions['dataConverter'];
}

/** One Temporal worker per pool; the orchestrator pool also runs the workflows. */
export async function createPoolWorkers(options: PoolWorkersOptions): Promise<Worker[]> {
  const activities = createActivities(options.deps);
  const slots: Record<Pool, number> = { orchestrator: 32, rollout: 64, trainer: 1, ...options.slots };
  const dataConverter = options.dataConverter ?? dataConverterFromEnv();
  return Promise.all(
    options.pools.map((pool) =>
      Worker.create({
        connection: options.connection,
        namespace: options.namespace,
        taskQueue: options.queues[pool],
        activities,
        dataConverter,
        // Every activity heartbeats, so a killed worker of any pool is noticed within the heartbeat timeout, and
        // every failure is classified and counted toward `timeouts.stuckAfterMinutes` (activities/lib/stuck.ts).
        interceptors: { activity: [heartbeatClock, failureEdge] },
        maxConcurrentActivityTaskExecutions: slots[pool],
        ...(options.identity ? { identity: `${options.identity}/${pool}` } : {}),
        ...(pool === 'orchestrator'
          ? options.workflowBundle
            ? { workflowBundle: options.workflowBundle }
            : { workflowsPath: require.resolve('../workflows') }
          : {}),
      }),
    ),
  );
}
