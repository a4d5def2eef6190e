import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';
import { heartbeatClock } from '../activities/lib/heartbeat';

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
}

/** One Temporal worker per pool; the orchestrator pool also runs the workflows. */
export async function createPoolWorkers(options: PoolWorkersOptions): Promise<Worker[]> {
  const activities = createActivities(options.deps);
  const slots: Record<Pool, number> = { orchestrator: 32, rollout: 64, trainer: 1, ...options.slots };
  return Promise.all(
    options.pools.map((pool) =>
      Worker.create({
        connection: options.connection,
        namespace: options.namespace,
        taskQueue: options.queues[pool],
        activities,
        // Every activity heartbeats, so a killed worker of any pool is noticed within the heartbeat timeout.
        interceptors: { activity: [heartbeatClock] },
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
