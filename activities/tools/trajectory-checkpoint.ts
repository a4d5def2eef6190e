import { getJson, putJson } from '../clients/storage/codec';
import type { ObjectStore } from '../clients/storage/types';
import type { Trajectory, TrajectoryCheckpoint } from './types';

/**
 * A trajectory checkpoint as one object in the run's storage (gzipped JSON under the unit's key, see
 * `trajectoryKey`): overwritten after every finished turn, so a shard retried on another worker resumes the
 * trajectory from its last finished turn. Each write replaces the whole object atomically.
 */
export function storedTrajectoryCheckpoint(store: ObjectStore, key: string): TrajectoryCheckpoint {
  return {
    load: () => getJson<Trajectory>(store, key),
    save: (partial) => putJson(store, key, partial),
  };
}
