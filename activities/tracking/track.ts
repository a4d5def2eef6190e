import { configuredApiKey, type WorkerEnv } from '../../config/env';
import type { RunConfig } from '../../config/schema';
import { currentLineage } from '../../contracts/lineage';
import type { TrackInput, TrackResult } from '../../contracts/selfplay';
import { getJson, putJson } from '../clients/storage/codec';
import { trackingKey } from '../clients/storage/keys';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import { heartbeatWhile } from '../lib/heartbeat';
import type { ActivityDeps } from '../stages/deps';
import { mustReadManifest } from '../stages/manifest';
import { mlflowTracker } from './mlflow';
import { pointsOf, type TrackedPoint } from './points';
import { tensorBoardTracker } from './tensorboard';
import type { TrackedRun, Tracker } from './types';
import { wandbTracker } from './wandb';

/** What `runs/{lineage}/tracking/{tracker}.json` holds: every commit up to `through` reached the tracker. */
interface TrackedThrough {
  through: number;
}

/**
 * `tracking` after each commit (the run workflow starts it, and does not wait for it before going on):
 * every commit of the current lineage that a tracker has not been sent is read from its manifest and sent.
 * A tracker itself skips the steps it already holds (types.ts), so a retried, replayed or repeated call
 * never logs a step twice; the record of how far each tracker got only says where to start reading. A
 * tracker that fails does not stop the others; the activity then fails (a few attempts), the run goes on, and
 * the next commit's call sends what this one could not.
 */
export function trackingActivities(deps: ActivityDeps) {
  const { store } = deps;
  return {
    async trackCommits(input: TrackInput): Promise<TrackResult> {
      const lineage = currentLineage(input.lineages);
      const run: TrackedRun = {
        runId: input.runId,
        lineage: lineage.id,
        ...(lineage.from ? { parent: lineage.from } : {}),
        config: input.config,
      };
      const first = (lineage.from?.iteration ?? 0) + 1;
      const trackers = trackersFor(input.config.tracking ?? {}, deps.env);
      const offered: Record<string, number[]> = {};
      const failures: string[] = [];
      await heartbeatWhile(
        () => ({ tracking: input.iteration, offered }),
        () =>
          Promise.all(
            trackers.map(async (tracker) => {
              const key = trackingKey(lineage.id, tracker.name);
              const sent = await getJson<TrackedThrough>(store, key);
              const points: TrackedPoint[] = [];
              for (let i = Math.max(first, (sent?.through ?? 0) + 1); i <= input.iteration; i++)
                points.push(...pointsOf(await mustReadManifest(store, lineage.id, i)));
              try {
                await tracker.log(run, points);
              } catch (err) {
                failures.push(`${tracker.name}: ${err instanceof Error ? err.message : String(err)}`);
                return;
              }
              offered[tracker.name] = points.map((p) => p.step);
              await putJson(store, key, { through: input.iteration } satisfies TrackedThrough);
            }),
          ),
      );
      if (failures.length > 0) {
        throw new Error(
          `tracking of ${lineage.id} up to iteration ${input.iteration} failed (the next commit sends it again): ` +
            failures.join('; '),
        );
      }
      return { offered };
    },
  };
}

/** The trackers the config names, with their credentials from the worker's environment. */
export function trackersFor(tracking: NonNullable<RunConfig['tracking']>, env: WorkerEnv): Tracker[] {
  const trackers: Tracker[] = [];
  if (tracking.wandb) {
    if (!env.python) {
      throw nonRetryable(
        NON_RETRYABLE.invalidConfig,
        'tracking.wandb needs SELFPLAY_PYTHON on the orchestrator workers: a Python with selfplay_kernel[tracking] ' +
          'installed (e.g. infra/kernels/.venv/bin/python)',
      );
    }
    const { mode = 'online', dir = '.selfplay/wandb', ...rest } = tracking.wandb;
    trackers.push(wandbTracker({ ...rest, mode, dir }, env.python));
  }
  if (tracking.mlflow) {
    const { trackingUri, experiment } = tracking.mlflow;
    const token = tracking.mlflow.apiKeyEnv
      ? configuredApiKey(env, tracking.mlflow, `MLflow server ${trackingUri}`)
      : undefined;
    trackers.push(mlflowTracker({ trackingUri, experiment, ...(token ? { token } : {}) }));
  }
  if (tracking.tensorboard) trackers.push(tensorBoardTracker(tracking.tensorboard));
  return trackers;
}
