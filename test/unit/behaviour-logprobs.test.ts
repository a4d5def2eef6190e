import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { LocalStore } from '../../activities/clients/storage';
import { InferencePool } from '../../activities/clients/inference';
import type { TrainingRow } from '../../activities/clients/trainer-contract';
import { batchKey, filterSummaryKey } from '../../activities/clients/storage/keys';
import { spiceRecipe } from '../../activities/recipes/spice';
import type { FilterOutput } from '../../activities/recipes/types';
import { lossReadsBehaviour } from '../../activities/stages/behaviour-logprobs';
import { filterActivities } from '../../activities/stages/filter';
import { loadWorkerEnv } from '../../config/env';
import { configFor } from '../support/recipe-harness';

const row = (role: string, group: string, behaviour?: number[]): TrainingRow => ({
  messages: [{ role: 'user', content: 'What is 2+2?' }],
  completion: '\\boxed{4}',
  role,
  group,
  reward: 1,
  advantage: 0.5,
  ...(behaviour ? { behaviourLogprobs: behaviour } : {}),
});

/** The filter activity on a local store, over a SPICE recipe whose filter returns `rows`. */
function filterOf(rows: TrainingRow[]) {
  const store = new LocalStore(mkdtempSync(path.join(os.tmpdir(), 'behaviour-logprobs-')));
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
  const filter = (overrides: Record<string, unknown>) =>
    activities.filter({
      runId: 'r',
      iteration: 2,
      config: configFor({ recipe: 'spice', training: { policy: 'p' }, ...overrides }),
      versions: { p: 1 },
      shards: [],
    });
  return { store, filter };
}

describe('rows without behaviour log-probs, when the loss reads them', () => {
  const withoutLogprobs = [
    row('challenger', 'challenger/doc-1', [-0.5, -0.25]),
    row('reasoner', 'reasoner/doc-1/task-0'),
    row('reasoner', 'reasoner/doc-1/task-1'),
  ];

  test('one-step-off (maxStaleness 1): the filter refuses them, non-retryably, naming the rows and why, and writes nothing', async () => {
    const { store, filter } = filterOf(withoutLogprobs);
    const err: unknown = await filter({ pipeline: { maxStaleness: 1 } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({ type: 'InvalidConfig', nonRetryable: true });
    const message = (err as Error).message;
    expect(message).toContain(
      '2 of 3 training rows carry no behaviour log-probs (roles reasoner; first: role "reasoner", group "reasoner/doc-1/task-0")',
    );
    expect(message).toContain('"tis" weighs each token by π_old/μ');
    expect(message).toContain('up to one version older than the one trained');
    expect(message).toContain('set pipeline.maxStaleness 0');
    expect(await store.exists(batchKey('r', 2, 'p'))).toBe(false);
    expect(await store.exists(filterSummaryKey('r', 2))).toBe(false);

    // The PPO ratio to μ (offPolicy set to ppo_ratio) reads them too when rows may be stale.
    const { filter: ppo } = filterOf(withoutLogprobs);
    await expect(
      ppo({ pipeline: { maxStaleness: 2 }, training: { policy: 'p', loss: { offPolicy: 'ppo_ratio' } } }),
    ).rejects.toThrow(/with pipeline\.maxStaleness 2 a row may be sampled up to 2 versions before/);
  });

  test('synchronous (maxStaleness 0), or with every row carrying them, the batch is written', async () => {
    const synchronous = filterOf(withoutLogprobs);
    expect((await synchronous.filter({})).batches.p?.rows).toBe(3);
    const carried = filterOf(withoutLogprobs.map((r) => ({ ...r, behaviourLogprobs: [-1, -1] })));
    expect((await carried.filter({ pipeline: { maxStaleness: 1 } })).batches.p?.rows).toBe(3);
    expect(await carried.store.exists(batchKey('r', 2, 'p'))).toBe(true);
  });

  test('which losses read them: tis always, the PPO ratio only one-step-off, REINFORCE under ppo_ratio never', () => {
    const reads = (overrides: Record<string, unknown>) =>
      lossReadsBehaviour(configFor({ recipe: 'spice', ...overrides }));
    const loss = (l: Record<string, unknown>) => ({ training: { loss: l } });
    expect(reads({})).toBe(false);
    expect(reads({ pipeline: { maxStaleness: 1 } })).toBe(true);
    expect(reads({ ...loss({ offPolicy: 'tis' }) })).toBe(true);
    expect(reads({ pipeline: { maxStaleness: 1 }, ...loss({ offPolicy: 'ppo_ratio' }) })).toBe(true);
    expect(
      reads({ pipeline: { maxStaleness: 1 }, ...loss({ type: 'reinforce', offPolicy: 'ppo_ratio' }) }),
    ).toBe(false);
  });
});
