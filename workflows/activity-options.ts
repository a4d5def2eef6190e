import { ActivityCancellationType, proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { RunConfig } from '../config/schema';
import { NON_RETRYABLE_TYPES } from '../contracts/errors';

/**
 * The retry policy of every activity (activities/lib/errors.ts has the classes): the deterministic failure
 * types listed fail at once, with the activity's message; anything else is transient and retried with
 * exponential backoff capped at `retryMaxSeconds`, without an attempt limit unless the config sets one, so an
 * outage of storage, inference or the trainer, however long, holds the run instead of failing it.
 */
export function retryPolicy(t: RunConfig['timeouts']): NonNullable<ActivityOptions['retry']> {
  return {
    initialInterval: `${t.retryInitialSeconds} seconds`,
    backoffCoefficient: 2,
    maximumInterval: `${t.retryMaxSeconds} seconds`,
    ...(t.activityMaxAttempts ? { maximumAttempts: t.activityMaxAttempts } : {}),
    nonRetryableErrorTypes: [...NON_RETRYABLE_TYPES],
  };
}

/** Attempts of one tracking call; what they could not send, the next commit's call sends. */
const TRACKING_ATTEMPTS = 3;

/**
 * Activity stubs for the three pools: per pool, a start-to-close limit per attempt (a kind's longest
 * legitimate attempt: a filter, a rollout shard, a training step); for every pool, a heartbeat timeout, so a
 * killed worker's activity is retried elsewhere after `heartbeatSeconds` rather than after the attempt's
 * limit (every activity heartbeats on a clock: activities/lib/heartbeat.ts).
 */
export function poolActivities(config: RunConfig) {
  const t = config.timeouts;
  const common = { heartbeatTimeout: `${t.heartbeatSeconds} seconds`, retry: retryPolicy(t) } as const;
  const orchestrator = proxyActivities<Activities>({
    ...common,
    taskQueue: config.pools.orchestrator,
    startToCloseTimeout: `${t.orchestratorMinutes} minutes`,
  });
  // The plan reads the corpus's segment index, and builds it on its first use of a corpus (minutes to hours for
  // a large one): it heartbeats, so a worker that dies mid-build is noticed within the heartbeat timeout rather
  // than at the end of the long deadline.
  const planner = proxyActivities<Activities>({
    ...common,
    taskQueue: config.pools.orchestrator,
    startToCloseTimeout: '6 hours',
  });
  // A cancelled iteration (a rollback) ends only once its trainer and rollout activities have stopped: no
  // step or restore of the abandoned lineage is still being sent, and no weight sync of it can load an
  // abandoned snapshot, when the next lineage brings the kernel and the servers to its version.
  const cancellationType = ActivityCancellationType.WAIT_CANCELLATION_COMPLETED;
  const rollout = proxyActivities<Activities>({
    ...common,
    taskQueue: config.pools.rollout,
    cancellationType,
    startToCloseTimeout: `${t.rolloutShardMinutes} minutes`,
  });
  const trainer = proxyActivities<Activities>({
    ...common,
    taskQueue: config.pools.trainer,
    cancellationType,
    startToCloseTimeout: `${t.trainStepMinutes} minutes`,
  });
  // A tracker is a side channel (activities/tracking/track.ts): a few attempts, then the next commit catches up.
  const tracking = proxyActivities<Activities>({
    ...common,
    retry: { ...common.retry, maximumAttempts: TRACKING_ATTEMPTS },
    taskQueue: config.pools.orchestrator,
    startToCloseTimeout: '10 minutes',
  });
  return {
    orchestrator,
    planner,
    tracking,
    rollout,
    trainer,
    judge: config.judgePool === 'rollout' ? rollout : orchestrator,
  };
}
