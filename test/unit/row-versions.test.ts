import type { TrainingRow } from '../../activities/clients/trainer-contract';
import { getJsonl } from '../../activities/clients/storage/codec';
import { batchKey } from '../../activities/clients/storage/keys';
import { filterOf, row } from '../support/filter-activity';

/**
 * Each training row carries the version of the policy that sampled it (`behaviourVersion`), so the kernel can
 * report and bound how stale the rows it trains are (infra/kernels/selfplay_kernel/staleness.py).
 */
describe('the behaviour version of each training row', () => {
  const rows = [
    row('challenger', 'challenger/doc-1', [-0.5]),
    row('reasoner', 'reasoner/doc-1/task-0', [-0.25]),
  ];
  const streaming = { pipeline: { maxStaleness: 1, streaming: true } };

  test('streaming: two iterations sampled by different versions write rows that say which', async () => {
    // Iteration 2 sampled version 0 beside iteration 1's rollout; iteration 3 sampled version 1.
    const { store, filter } = filterOf(rows);
    await filter(streaming, { iteration: 2, versions: { p: 0 } });
    await filter(streaming, { iteration: 3, versions: { p: 1 } });
    const versionsOf = async (iteration: number) =>
      ((await getJsonl<TrainingRow>(store, batchKey('r', iteration, 'p'))) ?? []).map(
        (r) => r.behaviourVersion,
      );
    expect(await versionsOf(2)).toEqual([0, 0]);
    expect(await versionsOf(3)).toEqual([1, 1]);
  });

  test('a version missing for the policy that sampled the rows is refused, naming the policy and role', async () => {
    const { filter } = filterOf(rows);
    await expect(filter(streaming, { iteration: 2, versions: { other: 0 } })).rejects.toThrow(
      'versions: no version of policy "p", which sampled the rows of role "challenger"',
    );
  });
});
