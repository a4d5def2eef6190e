import { scheduleOptions } from '../../../cli/schedule';

const valid = {
  lineage: 'nightly',
  cron: '0 2 * * *',
  iterations: '4',
  eval: 'test/fixtures/eval/heldout.jsonl',
  config: { recipe: 'spice' },
};

describe('selfplay schedule create options', () => {
  test('valid flags give the workflow input, the cron and a default catch-up window of 1h', () => {
    expect(scheduleOptions(valid)).toEqual({
      lineage: 'nightly',
      iterations: 4,
      eval: 'test/fixtures/eval/heldout.jsonl',
      config: { recipe: 'spice' },
      cron: '0 2 * * *',
      catchupWindow: '1h',
    });
    expect(scheduleOptions({ ...valid, catchupWindow: '1 day' }).catchupWindow).toBe('1 day');
  });

  test('every problem names its flag and the fix', () => {
    let message = '';
    try {
      scheduleOptions({
        lineage: 'bad name',
        iterations: 'many',
        catchupWindow: 'soon',
        config: { recipe: 'spice', batchSize: 0 },
      });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('cannot create the schedule');
    expect(message).toContain('--cron: required, e.g. --cron "0 2 * * *"');
    expect(message).toContain('--catchup-window: expected a duration such as 1h or "1 day", got "soon"');
    expect(message).toContain('--lineage NAME: letters, digits');
    expect(message).toContain('--iterations K:');
    expect(message).toContain('--eval FILE.jsonl: required');
    expect(message).toContain('--config/--set batchSize:');
  });

  test("a config whose rounds could outgrow an iteration's Temporal history is refused with the arithmetic", () => {
    const config = { recipe: 'spell', batchSize: 2048, spell: { maxRounds: 100 } };
    expect(() => scheduleOptions({ ...valid, config })).toThrow(
      /--config\/--set spell\.maxRounds: 100 rounds × .* lower spell\.maxRounds to at most 16,/,
    );
  });
});
