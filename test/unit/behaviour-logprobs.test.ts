import { ApplicationFailure } from '@temporalio/common';
import { batchKey, filterSummaryKey } from '../../activities/clients/storage/keys';
import { lossReadsBehaviour } from '../../activities/stages/behaviour-logprobs';
import { configFor } from '../support/recipe-harness';
import { filterOf, row } from '../support/filter-activity';

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
