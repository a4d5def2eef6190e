import { watchStatus } from '../../../cli/status';
import type { StatusSnapshot } from '../../../cli/status-snapshot';
import { waitFor } from '../../support/wait';

describe('selfplay status --watch', () => {
  const snapshots = (...statuses: string[]): (() => Promise<StatusSnapshot>) => {
    let n = 0;
    return () =>
      Promise.resolve({ runId: 'r', status: statuses[Math.min(n++, statuses.length - 1)] as string });
  };
  const output = (isTTY: boolean) => {
    const writes: string[] = [];
    return { writes, out: { write: (t: string) => void writes.push(t), isTTY, columns: 80 } };
  };

  test('on a terminal: redraws in place until the run closes', async () => {
    const { writes, out } = output(true);
    await watchStatus(snapshots('RUNNING', 'RUNNING', 'COMPLETED'), out, new AbortController().signal, 0);
    expect(writes).toEqual([
      'run r: running\n',
      '\x1b[1F\x1b[0Jrun r: running\n',
      '\x1b[1F\x1b[0Jrun r: completed\n',
    ]);
  });

  test('without a terminal: one snapshot, no escape codes', async () => {
    const { writes, out } = output(false);
    await watchStatus(snapshots('RUNNING'), out, new AbortController().signal, 0);
    expect(writes).toEqual(['run r: running\n']);
  });

  test('Ctrl-C (abort) ends the watch while it waits', async () => {
    const { writes, out } = output(true);
    const stop = new AbortController();
    const watching = watchStatus(snapshots('RUNNING'), out, stop.signal, 60_000);
    await waitFor('the first snapshot to be drawn', () => writes.length > 0);
    stop.abort();
    await watching;
    expect(writes).toEqual(['run r: running\n']);
  });
});
