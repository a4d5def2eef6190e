import { openStore } from '../clients/storage';
import type { TrackedPoint } from './points';
import { eventFile } from './tfrecord';
import type { Tracker } from './types';

/**
 * TensorBoard event files under `logDir` (a directory or s3://): one directory per lineage, so a run's
 * rollback lineages show as runs side by side (`{run}`, `{run}.r1`, …), and one file per step, written whole
 * (storage writes are atomic) and never again once there: a repeated call cannot add a step twice. File names
 * sort by step, the order TensorBoard reads them in.
 */
export function tensorBoardTracker(settings: { logDir: string }): Tracker {
  const store = openStore(settings.logDir);
  return {
    name: 'tensorboard',
    async log(run, points) {
      for (const point of points) {
        const key = eventFileKey(run.lineage, point);
        if (await store.exists(key)) continue;
        await store.put(key, eventFile([point], point.wallTime));
      }
    },
  };
}

const eventFileKey = (lineage: string, point: TrackedPoint): string =>
  `${lineage}/events.out.tfevents.${String(point.step).padStart(10, '0')}.selfplay`;
