import { listOptions, renderRunTable, visibilityQuery } from '../../../cli/list';

describe('selfplay list', () => {
  test('the visibility query filters by recipe and by the run state or Temporal status', () => {
    const base = `WorkflowType = 'selfPlayRun' AND ExecutionStatus != 'ContinuedAsNew'`;
    expect(visibilityQuery({})).toBe(base);
    expect(visibilityQuery({ recipe: 'spell', state: 'paused' })).toBe(
      `${base} AND SelfPlayRecipe = 'spell' AND ExecutionStatus = 'Running' AND SelfPlayState = 'paused'`,
    );
    expect(visibilityQuery({ state: 'completed' })).toBe(`${base} AND ExecutionStatus = 'Completed'`);
    expect(visibilityQuery({ state: 'timed_out' })).toBe(`${base} AND ExecutionStatus = 'TimedOut'`);
    expect(() => visibilityQuery({ recipe: "x' OR 1=1" })).toThrow('unknown recipe; use one of spice, spell');
    expect(() => visibilityQuery({ state: 'done' })).toThrow(
      '--state done: unknown state; use one of running',
    );
  });

  test('flags: a positive --limit, 20 by default', () => {
    expect(listOptions(new Map())).toEqual({ limit: 20 });
    expect(
      listOptions(
        new Map([
          ['--limit', ['5']],
          ['--recipe', ['mae']],
        ]),
      ),
    ).toEqual({ limit: 5, recipe: 'mae' });
    for (const bad of ['0', '-1', '2.5', 'all'])
      expect(() => listOptions(new Map([['--limit', [bad]]]))).toThrow(
        `--limit ${bad}: expected a positive integer`,
      );
  });

  test('an aligned table, numbers right-aligned, "-" for what a run has not recorded', () => {
    const startedAt = new Date('2026-11-21T10:05:33Z');
    expect(
      renderRunTable([
        {
          runId: 'spice-a',
          recipe: 'spice',
          state: 'paused',
          iteration: 12,
          meanReward: 0.4567,
          validTaskRate: 0.8125,
          startedAt,
        },
        { runId: 'mae-long-run-id', state: 'terminated', startedAt },
      ]),
    ).toBe(
      [
        'RUN              RECIPE  STATE       ITERATION  MEAN REWARD  VALID TASKS  STARTED (UTC)',
        'spice-a          spice   paused             12        0.457        81.3%  2026-11-21 10:05',
        'mae-long-run-id  -       terminated          -            -            -  2026-11-21 10:05',
      ].join('\n'),
    );
  });
});
