import { bar, renderStatus } from '../../../cli/progress-bars';
import type { StatusSnapshot } from '../../../cli/status-snapshot';
import type { IterationProgress, RunProgress } from '../../../workflows/messages';

const run = (over: Partial<RunProgress> = {}): RunProgress => ({
  runId: 'spice-1',
  recipe: 'spice',
  state: 'running',
  iteration: 2,
  iterations: 5,
  lastCommitted: 1,
  versions: { policy: 1 },
  lineage: 'spice-1',
  paused: false,
  stopRequested: false,
  iterationInFlight: true,
  params: { learningRate: 1e-6, temperature: 1, groupSize: 4, batchSize: 8 },
  recent: [
    {
      iteration: 1,
      validTaskRate: 0.75,
      meanReward: 0.25,
      meanRewardByRole: { challenger: 0.1, reasoner: 0.4 },
      zeroAdvantageFraction: 0,
      rows: 48,
      seconds: 12.5,
    },
  ],
  ...over,
});

const iteration = (over: Partial<IterationProgress> = {}): IterationProgress => ({
  iteration: 2,
  paused: false,
  held: false,
  stage: 'solve',
  stagesInFlight: 3,
  shards: 4,
  stages: {
    sync: { started: 2, finished: 2 },
    plan: { started: 1, finished: 1 },
    propose: { started: 4, finished: 4 },
    gate: { started: 4, finished: 3 },
    solve: { started: 3, finished: 1 },
  },
  ...over,
});

const snapshot = (over: Partial<StatusSnapshot> = {}): StatusSnapshot => ({
  runId: 'spice-1',
  status: 'RUNNING',
  progress: run(),
  iteration: iteration(),
  ...over,
});

const line = (text: string, stage: string): string =>
  text.split('\n').find((l) => l.startsWith(`  ${stage} `)) ?? '';

describe('selfplay status rendering', () => {
  test('bars: empty, partial with shards in flight, full only when all finished', () => {
    expect(bar(0, 0, 4, 8)).toBe('░░░░░░░░');
    expect(bar(0, 0, 0, 8)).toBe('░░░░░░░░');
    expect(bar(1, 2, 4, 8)).toBe('██▒▒▒▒░░');
    expect(bar(4, 0, 4, 8)).toBe('████████');
    // 99 of 100 does not round up to a full bar.
    expect(bar(99, 0, 100, 8)).toBe('███████░');
    expect(bar(99, 1, 100, 8)).toBe('███████▒');
  });

  test('a running iteration: per-stage bars and counts, single stages by state, recent rewards', () => {
    const text = renderStatus(snapshot(), 100);
    expect(text.split('\n')[0]).toBe(
      'run spice-1 (spice): iteration 2/5, running; last committed 1, policy v1',
    );
    expect(line(text, 'sync')).toBe('  sync     done');
    expect(line(text, 'plan')).toBe('  plan     done, 4 shards');
    expect(line(text, 'propose')).toMatch(/^ {2}propose {2}█{40} 4\/4$/);
    expect(line(text, 'gate')).toMatch(/^ {2}gate {5}█{30}▒{10} 3\/4 {2}1 running$/);
    expect(line(text, 'solve')).toMatch(/^ {2}solve {4}█{10}▒{20}░{10} 1\/4 {2}2 running$/);
    expect(line(text, 'judge')).toMatch(/^ {2}judge {4}░{40} 0\/4$/);
    expect(line(text, 'filter')).toBe('  filter   pending');
    expect(text).toContain(
      'ITERATION  VALID TASKS  MEAN REWARD  BY ROLE                           ROWS  SECONDS',
    );
    expect(text).toContain(
      '          1        75.0%        0.250  challenger 0.100, reasoner 0.400    48     12.5',
    );
    expect(text).not.toContain('paused');
  });

  test("a recipe that gathers rounds: the plan line counts them, the bars count every round's shards", () => {
    const text = renderStatus(
      snapshot({
        iteration: iteration({
          shards: 8,
          stages: { ...iteration().stages, plan: { started: 2, finished: 1 } },
        }),
      }),
      100,
    );
    expect(line(text, 'plan')).toBe('  plan     running, 8 shards in 2 rounds');
    expect(line(text, 'propose')).toMatch(/ 4\/8$/);
  });

  test('pending activities: each retried one with its attempt and whole last failure, then the count of the rest', () => {
    const failure =
      'trainer http://kernel:8000/v1/train/step: HTTP 500: internal: CUDA error (gave up after 4 attempts)';
    const text = renderStatus(
      snapshot({
        pending: [
          { workflowId: 'spice-1/iter-2', activity: 'update', attempt: 7, lastFailure: failure },
          { workflowId: 'spice-1/iter-2', activity: 'solve', attempt: 1 },
          { workflowId: 'spice-1/iter-2', activity: 'solve', attempt: 1 },
        ],
      }),
      60,
    );
    const lines = text.split('\n');
    const at = lines.indexOf('pending activities');
    expect(at).toBeGreaterThan(0);
    expect(lines[at + 1]).toMatch(/^ {2}update \(spice-1\/iter-2\): attempt 7; last failure: /);
    expect(
      lines
        .slice(at + 1, -1)
        .join(' ')
        .replace(/\s+/g, ' '),
    ).toContain(failure);
    expect(lines.filter((l) => l === '  2 on their first attempt')).toHaveLength(1);
    expect(lines.every((l) => l.length <= 60)).toBe(true);
  });

  test('paused: held at a boundary, unfinished stages marked, and how to resume', () => {
    const text = renderStatus(
      snapshot({
        progress: run({ paused: true, state: 'paused' }),
        iteration: iteration({
          paused: true,
          held: true,
          stagesInFlight: 0,
          stages: {
            ...iteration().stages,
            gate: { started: 4, finished: 4 },
            solve: { started: 2, finished: 2 },
          },
        }),
      }),
      100,
    );
    expect(text).toContain('iteration 2/5, paused;');
    expect(text).toContain('paused: held at a stage boundary; resume with: selfplay resume spice-1');
    expect(line(text, 'gate')).toMatch(/█{40} 4\/4$/);
    expect(line(text, 'solve')).toMatch(/█{20}░{20} 2\/4 {2}paused$/);
    expect(line(text, 'judge')).toMatch(/░{40} 0\/4 {2}paused$/);

    const finishing = renderStatus(
      snapshot({ progress: run({ paused: true, state: 'paused' }), iteration: iteration({ paused: true }) }),
      100,
    );
    expect(finishing).toContain('paused: 3 running stage call(s) finish first, then it holds');
  });

  test('before the plan, between iterations, stopping, completed and failed runs', () => {
    const unplanned = renderStatus(
      snapshot({
        iteration: {
          iteration: 2,
          paused: false,
          held: false,
          stagesInFlight: 1,
          stages: { sync: { started: 1, finished: 0 } },
        },
      }),
      100,
    );
    expect(line(unplanned, 'sync')).toBe('  sync     running');
    expect(line(unplanned, 'plan')).toBe('  plan     pending');
    expect(line(unplanned, 'propose')).toMatch(/░+ 0\/\?$/);

    const between = renderStatus(
      { runId: 'spice-1', status: 'RUNNING', progress: run({ iterationInFlight: false }) },
      100,
    );
    expect(between).toContain('between iterations');
    expect(
      renderStatus(snapshot({ progress: run({ stopRequested: true, state: 'stopping' }) }), 100),
    ).toContain('stopping: the run completes once iteration 2 has committed');

    const waiting = renderStatus(
      {
        runId: 'spice-1',
        status: 'RUNNING',
        progress: run({
          state: 'needsOperator',
          iterationInFlight: false,
          failure: { iteration: 2, type: 'UnknownModel', message: 'the server does not know model "m"' },
        }),
      },
      200,
    );
    expect(waiting).toContain('iteration 2/5, needsOperator;');
    expect(waiting).toContain(
      'needs operator: iteration 2 failed (UnknownModel): the server does not know model "m"',
    );
    expect(waiting).toContain('fix the cause, then: selfplay retry spice-1');
    expect(waiting).not.toContain('between iterations');

    // A cause longer than the terminal is wrapped, not cut: the operator needs all of it.
    const message =
      "trainer http://127.0.0.1:46561/v1/policies/toy/restore: lineage_conflict: lineage: this kernel holds run 'a''s weights";
    const failed: StatusSnapshot = {
      runId: 'spice-1',
      status: 'RUNNING',
      progress: run({ state: 'needsOperator', failure: { iteration: 3, type: 'VersionConflict', message } }),
    };
    const narrow = renderStatus(failed, 60).split('\n');
    const first = narrow.findIndex((l) => l.startsWith('needs operator:'));
    const retry = narrow.findIndex((l) => l.includes('fix the cause'));
    const cause = narrow.slice(first, retry);
    for (const l of narrow) expect(l.length).toBeLessThanOrEqual(60);
    expect(cause.length).toBeGreaterThan(1);
    expect(cause.map((l) => l.trim()).join(' ')).toBe(
      `needs operator: iteration 3 failed (VersionConflict): ${message}`,
    );
    // Even a terminal narrower than the indent gets every line, each within its width.
    expect(
      renderStatus(failed, 2)
        .split('\n')
        .every((l) => l.length <= 2),
    ).toBe(true);

    const completed = renderStatus(
      {
        runId: 'spice-1',
        status: 'COMPLETED',
        outcome: { runId: 'spice-1', lastCommitted: 3, versions: { policy: 3 }, recent: [], stopped: true },
      },
      100,
    );
    expect(completed).toBe('run spice-1: completed (stopped early); 3 iteration(s) committed, policy v3');
    expect(renderStatus({ runId: 'r', status: 'FAILED', failure: 'invalid run config' }, 100)).toBe(
      'run r: failed: invalid run config',
    );
  });

  test('width: bars shrink to fit down to a minimum, grow to a maximum, no line is wider than the terminal', () => {
    const barCells = (text: string): number => (line(text, 'solve').match(/[█▒░]/g) ?? []).length;
    expect(barCells(renderStatus(snapshot(), 200))).toBe(40);
    expect(barCells(renderStatus(snapshot(), 50))).toBe(21);
    expect(barCells(renderStatus(snapshot(), 30))).toBe(10);
    for (const width of [30, 50, 80]) {
      for (const l of renderStatus(snapshot(), width).split('\n'))
        expect(l.length).toBeLessThanOrEqual(width);
    }
  });
});
