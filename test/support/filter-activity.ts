import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../../activities/clients/storage';
import { InferencePool } from '../../activities/clients/inference';
import type { TrainingRow } from '../../activities/clients/trainer-contract';
import { spiceRecipe } from '../../activities/recipes/spice';
import type { FilterOutput } from '../../activities/recipes/types';
import { filterActivities } from '../../activities/stages/filter';
import { loadWorkerEnv } from '../../config/env';
import { configFor } from './recipe-harness';

/** A training row of `role` in `group`, with behaviour log-probs when given. */
export const row = (role: string, group: string, behaviour?: number[]): TrainingRow => ({
  messages: [{ role: 'user', content: 'What is 2+2?' }],
  completion: '\\boxed{4}',
  role,
  group,
  reward: 1,
  advantage: 0.5,
  ...(behaviour ? { behaviourLogprobs: behaviour } : {}),
});

/** Which iteration of run `r` the filter runs for, and the versions of policy `p` it sampled with. */
export interface FilteredIteration {
  iteration: number;
  versions: Record<string, number>;
}

/**
 * The filter activity on a local store, over a SPICE recipe (one policy, `p`) whose filter returns `rows`:
 * `filter(overrides)` runs it with the run config `overrides` for iteration 2, sampled at version 1 of `p`,
 * unless `at` says otherwise.
 */
export function filterOf(rows: TrainingRow[]) {
  const store = new LocalStore(mkdtempSync(path.join(os.tmpdir(), 'filter-activity-')));
  const output: FilterOutput = {
    rows,
    metrics: {
      documents: 1,
      validTaskRate: 1,
      invalidReasons: {},
      passRateHistogram: [],
      zeroAdvantageFraction: 0,
      meanRewardByRole: {},
      rowsByRole: {},
      extra: {},
    },
  };
  const activities = filterActivities({
    store,
    env: loadWorkerEnv({}),
    inference: new InferencePool(),
    recipes: { spice: { ...spiceRecipe, filter: () => output } },
  });
  const filter = (
    overrides: Record<string, unknown>,
    at: FilteredIteration = { iteration: 2, versions: { p: 1 } },
  ) =>
    activities.filter({
      runId: 'r',
      ...at,
      config: configFor({ recipe: 'spice', training: { policy: 'p' }, ...overrides }),
      shards: [],
    });
  return { store, filter };
}
