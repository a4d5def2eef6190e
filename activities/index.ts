import type { ActivityDeps } from './stages/deps';
import { planActivities } from './stages/plan';
import { shardStageActivities } from './stages/shard-stages';
import { filterActivities } from './stages/filter';
import { updateActivities } from './stages/update';
import { commitActivities } from './stages/commit';
import { syncActivities } from './stages/sync';
import { indexActivities } from './stages/index-build';
import { lineageActivities } from './stages/lineage';
import { retentionActivities } from './stages/retention';
import { trackingActivities } from './tracking/track';
import { lineageJobActivities } from './continual/jobs';
import { evaluationActivities } from './continual/evaluate';
import { benchmarkActivities } from './evaluation/evaluate';
import { checkpointActivities } from './evaluation/checkpoint';

export type { ActivityDeps } from './stages/deps';

/** Every activity, built around one worker's dependencies. Workflows import only the type. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...planActivities(deps),
    ...shardStageActivities(deps),
    ...filterActivities(deps),
    ...updateActivities(deps),
    ...commitActivities(deps),
    ...syncActivities(deps),
    ...indexActivities(deps),
    ...lineageActivities(deps),
    ...retentionActivities(deps),
    ...trackingActivities(deps),
    ...lineageJobActivities(deps),
    ...evaluationActivities(deps),
    ...benchmarkActivities(deps),
    ...checkpointActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
