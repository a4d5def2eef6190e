import os from 'node:os';
import { chooseLocalRun, goneLocalWorker, type OpenRun } from '../../infra/local/local-runs';

/** Which run `npm run local` runs: the newest unfinished one, a new one (--new) or the one named (--resume). */
describe('chooseLocalRun', () => {
  const crashed: OpenRun = { runId: 'local-2', lineage: 'local-2', state: 'running', lastCommitted: 4 };
  const older: OpenRun = {
    runId: 'local-1',
    lineage: 'local-1.r1',
    state: 'needsOperator',
    lastCommitted: 2,
  };

  test('nothing unfinished: a new run', () => {
    expect(chooseLocalRun({}, [], 'local-3')).toEqual({
      runId: 'local-3',
      lineage: 'local-3',
      resume: false,
      retry: false,
      message: 'starting new run local-3',
    });
  });

  test('the newest unfinished run is resumed from the iteration after its last commit; the others are named', () => {
    expect(chooseLocalRun({}, [crashed, older], 'local-3')).toEqual({
      runId: 'local-2',
      lineage: 'local-2',
      resume: true,
      retry: false,
      message: 'resuming run local-2 from iteration 5; unfinished: local-1 (resume with --resume local-1)',
    });
  });

  test('--new starts a new run and says how to resume the unfinished one', () => {
    expect(chooseLocalRun({ fresh: true }, [crashed], 'local-3')).toMatchObject({
      runId: 'local-3',
      resume: false,
      message: 'starting new run local-3; unfinished: local-2 (resume with --resume local-2)',
    });
  });

  test('--resume RUN: a run waiting for its operator is retried, in the lineage it writes under now', () => {
    expect(chooseLocalRun({ named: older }, [crashed, older], 'local-3')).toEqual({
      runId: 'local-1',
      lineage: 'local-1.r1',
      resume: true,
      retry: true,
      message:
        'resuming run local-1 from iteration 3, retrying the iteration it waited on for its operator; ' +
        'unfinished: local-2 (resume with --resume local-2)',
    });
  });

  test('a paused run is resumed paused, with the command that lets it go on', () => {
    const paused = { ...crashed, state: 'paused' };
    expect(chooseLocalRun({}, [paused], 'local-3').message).toBe(
      'resuming run local-2 from iteration 5 (paused: npx selfplay resume local-2 lets it go on)',
    );
  });
});

describe('goneLocalWorker', () => {
  const host = os.hostname();
  test("a worker of this machine whose process has ended, and no other machine's", () => {
    expect(goneLocalWorker(`${host}:41/rollout`, () => false)).toBe(true);
    expect(goneLocalWorker(`${host}:41`, () => false)).toBe(true);
    expect(goneLocalWorker(`${host}:41/rollout`, () => true)).toBe(false);
    expect(goneLocalWorker(`elsewhere-${host}:41/rollout`, () => false)).toBe(false);
    expect(goneLocalWorker('41@somewhere', () => false)).toBe(false);
  });
});
