import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { selfplay } from '../../support/cli';
import {
  commandHelp,
  completionScript,
  GLOBAL_FLAGS,
  overallHelp,
  parseCommandLine,
  usageLine,
  type CommandSpec,
} from '../../../cli/command-line';
import { COMMANDS } from '../../../cli/commands';

const parse = (...argv: string[]) => parseCommandLine(COMMANDS, argv);

describe('the command line', () => {
  test("each command takes its own flags: another command's is refused, naming what it takes", () => {
    expect(() => parse('pause', 'run-1', '--cron', 'x')).toThrow(
      /^pause does not take --cron; it takes no flags\n\nselfplay pause RUN_ID\n/,
    );
    expect(() => parse('rollback', 'run-1', '--to', '2', '--from', '1')).toThrow(
      'rollback does not take --from; it takes --to',
    );
    expect(() => parse('status', 'run-1', '--wacth')).toThrow(
      'status does not take --wacth; it takes --watch',
    );
  });

  test('values (--flag v, --flag=v), repeats and switches; global flags anywhere', () => {
    const { spec, args, flags, switches } = parse('start', '--set', 'a=1', '--set=b=2', '--wait', '--debug');
    expect(spec.name).toBe('start');
    expect(args).toEqual([]);
    expect(flags.get('--set')).toEqual(['a=1', 'b=2']);
    expect([...switches].sort()).toEqual(['--debug', '--wait']);
    expect(parse('schedule', 'pause', 'nightly').args).toEqual(['nightly']);
  });

  test('a missing argument, value or required flag, or a value outside the choices, says what to give', () => {
    expect(() => parse('pause')).toThrow('pause needs RUN_ID');
    expect(() => parse('pause', 'a', 'b')).toThrow('pause takes RUN_ID; unexpected: b');
    expect(() => parse('list', '--limit')).toThrow('--limit needs a value, e.g. --limit N');
    expect(() => parse('start', '--config', '--wait')).toThrow('--config needs a value, e.g. --config FILE');
    expect(() => parse('status', 'r', '--watch=yes')).toThrow('--watch takes no value');
    expect(() => parse('rollback', 'r')).toThrow('rollback needs --to N');
    expect(() => parse('list', '--state', 'sleeping')).toThrow(
      '--state: expected one of running, paused, stopping, needsOperator, completed, failed, terminated, canceled, timed_out, got sleeping',
    );
    expect(() => parse('pasue', 'r')).toThrow(
      /^unknown command "pasue"; the commands: start, list, .*\n\(selfplay help/,
    );
    expect(() => parse('schedule')).toThrow(/^schedule needs a command: one of create, list, describe/);
    expect(() => parse('schedule', 'create', '--lineage', 'n')).toThrow('schedule create needs --cron');
  });

  test('--help goes with any command and skips its checks', () => {
    expect(parse('rollback', '--help').switches.has('--help')).toBe(true);
  });

  test('help is made from the definitions: every flag with its description', () => {
    const spec: CommandSpec = {
      name: 'demo',
      args: ['RUN_ID', 'MORE?'],
      summary: 'Does a demo. Then more.',
      flags: {
        out: { value: 'FILE', required: true, description: 'where it goes' },
        set: { value: 'k=v', multiple: true, description: 'an override' },
        kind: { value: 'KIND', choices: ['a', 'b'], description: 'which' },
        wait: { description: 'wait for it' },
      },
    };
    expect(usageLine(spec)).toBe(
      'selfplay demo RUN_ID [MORE] --out FILE [--set k=v]... [--kind a|b] [--wait]',
    );
    const help = commandHelp(spec);
    for (const text of [
      '--out FILE',
      'where it goes (required)',
      'an override (repeatable)',
      '--wait',
      '--debug',
    ])
      expect(help).toContain(text);
    const all = overallHelp([spec, ...COMMANDS], 'FOOTER');
    expect(all).toContain('  demo RUN_ID [MORE] --out FILE');
    expect(all).toContain('      Does a demo\n');
    for (const command of COMMANDS) expect(all).toContain(usageLine(command).slice('selfplay '.length));
    expect(Object.keys(GLOBAL_FLAGS)).toEqual(['help', 'debug']);
  });
});

describe('shell completion', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'completion-'));
  writeFileSync(path.join(dir, 'run.yaml'), 'recipe: spice\n');
  const script = path.join(dir, 'selfplay.bash');
  writeFileSync(script, completionScript(COMMANDS, 'bash'));

  /** What bash offers after `words` (the last one being completed), with the generated script. */
  const complete = (...words: string[]): string[] =>
    execFileSync(
      'bash',
      [
        '-c',
        `source "$1"; shift; COMP_WORDS=(selfplay "$@"); COMP_CWORD=$#; _selfplay; printf '%s\\n' "\${COMPREPLY[@]}"`,
        'complete',
        script,
        ...words,
      ],
      { cwd: dir, encoding: 'utf8' },
    )
      .split('\n')
      .filter(Boolean);

  test('commands, subcommands, flags, choices and files', () => {
    expect(complete('sch')).toEqual(['schedule']);
    expect(complete('schedule', 'un')).toEqual(['unpause']);
    expect(complete('pause', 'RUN', '--')).toEqual(['--help', '--debug']);
    expect(complete('export', 'RUN', '--m')).toEqual(['--merge-lora', '--model']);
    expect(complete('index', 'build', '--kind', '')).toEqual(['bm25', 'dense']);
    expect(complete('start', '--recipe', 's')).toEqual(['spice', 'spell', 'ssp', 'scope']);
    expect(complete('start', '--config', 'ru')).toEqual(['run.yaml']);
    expect(complete('list', '--limit', '')).toEqual([]);
  });

  test('the zsh script is the bash one through bashcompinit', () => {
    const zsh = completionScript(COMMANDS, 'zsh');
    expect(zsh.startsWith('autoload -U +X bashcompinit && bashcompinit\n')).toBe(true);
    expect(zsh).toContain(completionScript(COMMANDS, 'bash'));
  });
});

describe('selfplay', () => {
  test('pause RUN --cron x is refused with the usage of pause, before reaching any server', async () => {
    const result = await selfplay(['pause', 'some-run', '--cron', 'x'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'pause does not take --cron; it takes no flags\n\nselfplay pause RUN_ID\n(selfplay pause --help for its flags)\n',
    );
  });

  test("--help after a command prints that command's usage and flags; help lists every command", async () => {
    const result = await selfplay(['export', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^usage: selfplay export RUN_ID --out DIR\|s3:\/\/… /);
    expect(result.stdout).toContain('--merge-lora');
    expect(result.stdout).not.toMatch(/rollback/);
    const all = await selfplay(['help']);
    expect(all.code).toBe(0);
    for (const command of COMMANDS) expect(all.stdout).toContain(`  ${command.name}`);
    expect((await selfplay(['help', 'schedule', 'create'])).stdout).toMatch(
      /^usage: selfplay schedule create /,
    );
  });

  test('completion prints the script; an error shows its stack only with --debug', async () => {
    const bash = await selfplay(['completion', 'bash']);
    expect(bash.stdout).toBe(completionScript(COMMANDS, 'bash'));
    const env = { SELFPLAY_STORAGE: 'ftp://nowhere/x' };
    const plain = await selfplay(['state', 'some-run'], env);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(
      /^unsupported storage URI ftp:\/\/nowhere\/x: .*\n\(selfplay … --debug prints the stack trace\)\n$/,
    );
    const debug = await selfplay(['state', 'some-run', '--debug'], env);
    expect(debug.code).toBe(1);
    expect(debug.stderr).toMatch(/PermanentReadError: unsupported storage URI[^]*\n\s+at /);
  });
});
