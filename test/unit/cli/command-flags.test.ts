import { selfplay } from '../../support/cli';
import { foreignFlagProblem, flagsNamedIn, usageEntry } from '../../../cli/command-flags';

const USAGE = `selfplay <command>
  start --recipe NAME [--set key=value]... [--wait]
        start a run
  pause RUN_ID | resume RUN_ID | stop RUN_ID
                    pause at the next stage boundary
  schedule create --lineage NAME --cron "0 2 * * *"
                    nightly continual training
  schedule list | describe NAME | pause NAME
                    the lineage schedules
Environment: TEMPORAL_ADDRESS`;

describe('per-command flags', () => {
  test('a flag of another command is refused, naming what the command takes', () => {
    expect(foreignFlagProblem('pause', ['--cron'], {})).toBe('pause does not take --cron; it takes no flags');
    expect(foreignFlagProblem('rollback', ['--to', '--from'], {})).toBe(
      'rollback does not take --from; it takes --to',
    );
    expect(foreignFlagProblem('start', ['--set', '--wait', '--help'], {})).toBeUndefined();
  });

  test('a command with a usage text of its own takes the flags it names', () => {
    const usages = { export: '  export RUN_ID --out DIR [--iteration N] [--merge-lora]' };
    expect(flagsNamedIn(usages.export)).toEqual(['--out', '--iteration', '--merge-lora']);
    expect(foreignFlagProblem('export', ['--out', '--merge-lora'], usages)).toBeUndefined();
    expect(foreignFlagProblem('export', ['--watch'], usages)).toBe(
      'export does not take --watch; it takes --out, --iteration, --merge-lora',
    );
  });

  test("a command's usage is its entries, alternatives included, and not another command's", () => {
    expect(usageEntry(USAGE, 'resume')).toBe(
      '  pause RUN_ID | resume RUN_ID | stop RUN_ID\n                    pause at the next stage boundary',
    );
    expect(usageEntry(USAGE, 'pause')).not.toMatch(/schedule/);
    expect(usageEntry(USAGE, 'schedule')?.split('\n')).toHaveLength(4);
    expect(usageEntry(USAGE, 'nothing')).toBeUndefined();
  });
});

describe('selfplay refuses flags its command does not take', () => {
  test('pause RUN --cron x is refused with the usage of pause, before reaching any server', async () => {
    const result = await selfplay(['pause', 'some-run', '--cron', 'x'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^pause does not take --cron; it takes no flags\n\n {2}pause RUN_ID \| resume RUN_ID/,
    );
    expect(result.stderr).not.toMatch(/schedule/);
  });

  test("--help after a command prints that command's usage", async () => {
    const result = await selfplay(['export', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^ {2}export RUN_ID --out/);
    expect(result.stdout).not.toMatch(/rollback/);
  });
});
