import type { Client } from '@temporalio/client';
import { followRun } from '../../../cli/follow';
import type { RunProgress } from '../../../workflows/messages';

const commit = (iteration: number): RunProgress['recent'][number] => ({
  iteration,
  meanReward: 0.25,
  meanRewardByRole: { challenger: 0.25 },
  zeroAdvantageFraction: 0,
  validTaskRate: 0.5,
  rows: 8,
  seconds: 2,
});

/** A run whose `progress` answers are `answers` in turn (the last one again), and which ends after them. */
function fakeClient(answers: Array<Partial<RunProgress> | undefined>): Client {
  let asked = 0;
  let end: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => (end = resolve));
  const handle = {
    result: () => ended.then(() => ({ runId: 'r', lastCommitted: 3, versions: { p: 3 }, recent: [] })),
    query: () => {
      const answer = answers[Math.min(asked++, answers.length - 1)];
      if (asked >= answers.length) end();
      return answer ? Promise.resolve(answer) : Promise.reject(new Error('no worker yet'));
    },
  };
  return { workflow: { getHandle: () => handle } } as unknown as Client;
}

describe('followRun', () => {
  test('prints each commit after the ones shown, a failure the run waits on once, and the end', async () => {
    const failure = { iteration: 3, type: 'UnknownModel', message: 'the server does not know model "m"' };
    const lines: string[] = [];
    await followRun(
      fakeClient([
        undefined,
        { recent: [commit(1), commit(2)] },
        { recent: [commit(1), commit(2)], failure },
        undefined,
        { recent: [commit(1), commit(2)], failure },
        { recent: [commit(1), commit(2), commit(3)] },
      ]),
      'r',
      { after: 1, print: (line) => lines.push(line), everyMs: 1 },
    );
    expect(lines).toEqual([
      'iteration 2 committed: valid tasks 50.0%, mean reward challenger 0.250, 8 training rows, 2.0 s',
      'run r waits for its operator: iteration 3 failed (UnknownModel): the server does not know model "m"\n' +
        '  once the cause is fixed: npx selfplay retry r',
      'iteration 3 committed: valid tasks 50.0%, mean reward challenger 0.250, 8 training rows, 2.0 s',
      'run r completed: 3 iterations committed, p v3',
    ]);
  });
});
