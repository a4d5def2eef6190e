import { ActivityCancellationType, proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { RunConfig } from '../config/schema';

/** Errors no retry can fix: they fail the stage at once, with the activity's message. */
const nonRetryableErrorTypes = [
  'InvalidConfig',
  'InvalidInput',
  'UnknownModel',
  'ContractViolation',
  'VersionConflict',
];

/** Activity stubs for the three pools, with timeouts and retries taken from the run config. */
export function poolActivities(config: RunConfig) {
  const retry = (attempts: number): ActivityOptions['retry'] => ({
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: attempts,
    nonRetryableErrorTypes,
  });
  const t = config.timeouts;
  const orchestrator = proxyActivities<Activities>({
    taskQueue: config.pools.orchestrator,
    startToCloseTimeout: '30 minutes',
    retry: retry(t.activityMaxAttempts),
  });
  // The plan reads the corpus's segment index, and builds it on its first use of a corpus (minutes to hours for
  // a large one): it heartbeats, so a worker that dies mid-build is noticed within the heartbeat timeout rather
  // than at the end of the long deadline.
  const planner = proxyActivities<Activities>({
    taskQueue: config.pools.orchestrator,
    startToCloseTimeout: '6 hours',
    heartbeatTimeout: `${t.heartbeatSeconds} seconds`,
    retry: retry(t.activityMaxAttempts),
  });
  // A cancelled iteration (a rollback) ends only once its trainer and rollout activities have stopped: no
  // step or restore of the abandoned lineage is still being sent, and no weight sync of it can load an
  // abandoned snapshot, when the next lineage brings the kernel and the servers to its version.
  const cancellationType = ActivityCancellationType.WAIT_CANCELLATION_COMPLETED;
  const rollout = proxyActivities<Activities>({
    taskQueue: config.pools.rollout,
    cancellationType,
    startToCloseTimeout: `${t.rolloutShardMinutes} minutes`,
    heartbeatTimeout: `${t.heartbeatSeconds} seconds`,
    retry: retry(t.activityMaxAttempts),
  });
  const trainer = proxyActivities<Activities>({
    taskQueue: config.pools.trainer,
    cancellationType,
    startToCloseTimeout: `${t.trainStepMinutes} minutes`,
    heartbeatTimeout: `${t.heartbeatSeconds} seconds`,
    retry: retry(t.activityMaxAttempts),
  });
  return {
    orchestrator,
    planner,
    rollout,
    trainer,
    judge: config.judgePool === 'rollout' ? rollout : orchestrator,
  };
}
