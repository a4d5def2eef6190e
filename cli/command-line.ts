import { parseArgs } from 'node:util';

/**
 * The CLI's command line, from one definition per command (cli/commands.ts): parsing with Node's own
 * `util.parseArgs` (strict: an unknown flag, a flag without its value or a value for a switch is refused), the
 * checks parseArgs leaves (arguments, required flags, choices), and the help and shell completion, all made from
 * the same definitions, so what `--help` says is what the parser takes. Every refusal is a `UsageError` that
 * says what is wrong and ends with the command's usage.
 */

export interface FlagSpec {
  /** The value's name in usage (`N`, `FILE`); a flag without one is a switch. */
  value?: string;
  /** Given any number of times, each value kept. */
  multiple?: boolean;
  required?: boolean;
  /** The only values it takes: checked, and offered by completion. */
  choices?: readonly string[];
  /** Its value is a local path: completion offers files. */
  path?: boolean;
  description: string;
}

export interface CommandSpec {
  /** One word, or a group and a word (`schedule create`). */
  name: string;
  /** Positional arguments in order; an optional one ends in `?` (`COMMAND?`). */
  args: readonly string[];
  /** What it does: the first sentence is the command's line in `selfplay help`. */
  summary: string;
  flags: Readonly<Record<string, FlagSpec>>;
}

/** Flags every command takes. */
export const GLOBAL_FLAGS: Readonly<Record<string, FlagSpec>> = {
  help: { description: "this command's usage and flags" },
  debug: { description: 'on an error, print the stack trace as well as the message' },
};

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface ParsedCommand {
  spec: CommandSpec;
  /** The positional arguments, in order. */
  args: string[];
  /** `--name` → its values, for the value flags given. */
  flags: Map<string, string[]>;
  /** The switches given (`--wait`), global ones included. */
  switches: Set<string>;
}

/** Finds the command `argv` names and parses its flags; throws a `UsageError` that says what to do. */
export function parseCommandLine(specs: readonly CommandSpec[], argv: readonly string[]): ParsedCommand {
  const { spec, rest } = findCommand(specs, argv);
  const fail = (problem: string): never => {
    throw new UsageError(`${problem}\n\n${usageLine(spec)}\n(selfplay ${spec.name} --help for its flags)`);
  };
  const options = Object.fromEntries(
    Object.entries({ ...spec.flags, ...GLOBAL_FLAGS }).map(([name, flag]) => [
      name,
      { type: flag.value ? ('string' as const) : ('boolean' as const), multiple: flag.multiple ?? false },
    ]),
  );
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: [...rest], options, strict: true, allowPositionals: true });
  } catch (err) {
    return fail(parseProblem(spec, err));
  }
  const flags = new Map<string, string[]>();
  const switches = new Set<string>();
  for (const [name, value] of Object.entries(parsed.values)) {
    if (typeof value === 'boolean') switches.add(`--${name}`);
    else if (value !== undefined)
      flags.set(`--${name}`, ([] as Array<string | boolean>).concat(value).map(String));
  }
  if (switches.has('--help')) return { spec, args: parsed.positionals, flags, switches };
  const required = spec.args.filter((a) => !a.endsWith('?'));
  if (parsed.positionals.length < required.length)
    fail(`${spec.name} needs ${required.slice(parsed.positionals.length).join(' ')}`);
  if (parsed.positionals.length > spec.args.length)
    fail(
      `${spec.name} takes ${spec.args.length ? spec.args.join(' ') : 'no arguments'}; ` +
        `unexpected: ${parsed.positionals.slice(spec.args.length).join(' ')}`,
    );
  for (const [name, flag] of Object.entries(spec.flags)) {
    const values = flags.get(`--${name}`);
    if (flag.required && !values) fail(`${spec.name} needs --${name} ${flag.value}`);
    const bad = values?.find((v) => flag.choices && !flag.choices.includes(v));
    if (bad !== undefined) fail(`--${name}: expected one of ${flag.choices?.join(', ')}, got ${bad}`);
  }
  return { spec, args: parsed.positionals, flags, switches };
}

/** The command `argv` starts with (the longest name that matches), and the words after it. */
function findCommand(
  specs: readonly CommandSpec[],
  argv: readonly string[],
): { spec: CommandSpec; rest: readonly string[] } {
  const [first = '', second = ''] = argv;
  const two = specs.find((s) => s.name === `${first} ${second}`);
  if (two) return { spec: two, rest: argv.slice(2) };
  const one = specs.find((s) => s.name === first);
  if (one) return { spec: one, rest: argv.slice(1) };
  const group = specs.filter((s) => s.name.startsWith(`${first} `)).map((s) => s.name.split(' ')[1]);
  if (first !== '' && group.length > 0)
    throw new UsageError(
      `${first} ${second ? `has no command "${second}"` : 'needs a command'}: one of ${group.join(', ')}\n\n` +
        specs
          .filter((s) => s.name.startsWith(`${first} `))
          .map(usageLine)
          .join('\n'),
    );
  throw new UsageError(
    `${first.startsWith('-') ? `a command comes first, not ${first}` : `unknown command "${first}"`}; the commands: ` +
      `${[...new Set(specs.map((s) => s.name.split(' ')[0]))].join(', ')}\n(selfplay help lists them with their flags)`,
  );
}

/** What parseArgs refused, in the CLI's words. */
function parseProblem(spec: CommandSpec, err: unknown): string {
  const { code, message } = err as { code?: string; message: string };
  const flag = /'(-[^'\s]+)/.exec(message)?.[1] ?? '';
  const name = flag.replace(/^-+/, '').replace(/=.*$/, '');
  const own = Object.keys(spec.flags).map((f) => `--${f}`);
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION')
    return `${spec.name} does not take ${flag}; ${own.length ? `it takes ${own.join(', ')}` : 'it takes no flags'}`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const value = spec.flags[name]?.value;
    return value
      ? `--${name} needs a value, e.g. --${name} ${value} (a value starting with - as --${name}=VALUE)`
      : `--${name} takes no value`;
  }
  return message;
}

/** `selfplay NAME ARGS --required V [--optional V] [--many V]... [--switch]`. */
export function usageLine(spec: CommandSpec): string {
  const flags = Object.entries(spec.flags).map(([name, flag]) => {
    const text = `--${name}${flag.value ? ` ${flag.choices ? flag.choices.join('|') : flag.value}` : ''}`;
    const once = flag.required ? text : `[${text}]`;
    return flag.multiple ? `${once}...` : once;
  });
  const args = spec.args.map((a) => (a.endsWith('?') ? `[${a.slice(0, -1)}]` : a));
  return ['selfplay', spec.name, ...args, ...flags].join(' ');
}

/** `selfplay NAME --help`: usage, what it does, and every flag. */
export function commandHelp(spec: CommandSpec): string {
  const entries = Object.entries({ ...spec.flags, ...GLOBAL_FLAGS }).map(([name, flag]) => ({
    left: `--${name}${flag.value ? ` ${flag.value}` : ''}`,
    right: `${flag.description}${flag.required ? ' (required)' : ''}${flag.multiple ? ' (repeatable)' : ''}`,
  }));
  const width = Math.max(...entries.map((e) => e.left.length)) + 2;
  return [
    `usage: ${usageLine(spec)}`,
    '',
    wrap(spec.summary, 0),
    '',
    'flags:',
    ...entries.map((e) => `  ${e.left.padEnd(width)}${wrap(e.right, width + 2).trimStart()}`),
  ].join('\n');
}

/** `selfplay help`: every command's usage and first sentence, then `footer`. */
export function overallHelp(specs: readonly CommandSpec[], footer: string): string {
  return [
    'usage: selfplay COMMAND [ARGS] [FLAGS]   (selfplay COMMAND --help: its flags; --debug: stack traces)',
    '',
    ...specs.flatMap((spec) => [
      `  ${usageLine(spec).slice('selfplay '.length)}`,
      wrap(firstSentence(spec.summary), 6),
    ]),
    '',
    footer,
  ].join('\n');
}

const firstSentence = (text: string): string =>
  /^.*?[.:;](\s|$)/
    .exec(text)?.[0]
    .trim()
    .replace(/[.:;]$/, '') ?? text;

/** Words wrapped at 110 columns, each line indented by `indent`. */
function wrap(text: string, indent: number): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && indent + line.length + 1 + word.length > 110) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  lines.push(line);
  return lines.map((l) => `${' '.repeat(indent)}${l}`).join('\n');
}

/**
 * A completion script for bash or zsh (zsh through its bash compatibility): the commands, then each command's
 * subcommands and flags, a flag's choices after it, and files after a path flag.
 */
export function completionScript(specs: readonly CommandSpec[], shell: 'bash' | 'zsh'): string {
  const quote = (words: readonly string[]): string => `'${words.join(' ')}'`;
  const tops = [...new Set(specs.map((s) => s.name.split(' ')[0] as string))];
  const groups = tops.filter((t) => specs.some((s) => s.name.startsWith(`${t} `)));
  const globals = Object.keys(GLOBAL_FLAGS).map((f) => `--${f}`);
  const flagCases = specs.map(
    (s) =>
      `    ${quote([s.name])}) flags=${quote([...Object.keys(s.flags).map((f) => `--${f}`), ...globals])} ;;`,
  );
  const valueCases = specs.flatMap((s) =>
    Object.entries(s.flags)
      .filter(([, f]) => f.value)
      .map(([name, f]) => {
        const offer = f.choices
          ? `COMPREPLY=($(compgen -W ${quote(f.choices)} -- "$cur"))`
          : f.path
            ? 'COMPREPLY=($(compgen -f -- "$cur"))'
            : 'COMPREPLY=()';
        return `    ${quote([`${s.name} --${name}`])}) ${offer}; return ;;`;
      }),
  );
  const groupCases = groups.map(
    (g) =>
      `    ${g}) words=${quote(specs.filter((s) => s.name.startsWith(`${g} `)).map((s) => s.name.split(' ')[1] as string))} ;;`,
  );
  const bash = `# selfplay completion, generated from the CLI's command definitions (selfplay completion bash|zsh)
_selfplay() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" command words flags
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W ${quote(tops)} -- "$cur")); return
  fi
  command="\${COMP_WORDS[1]}"
  case "$command" in
${groupCases.join('\n')}
  esac
  if [ -n "$words" ]; then
    if [ "$COMP_CWORD" -eq 2 ]; then COMPREPLY=($(compgen -W "$words" -- "$cur")); return; fi
    command="$command \${COMP_WORDS[2]}"
  fi
  case "$command $prev" in
${valueCases.join('\n')}
  esac
  case "$command" in
${flagCases.join('\n')}
  esac
  if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$flags" -- "$cur")); else COMPREPLY=(); fi
}
complete -o default -F _selfplay selfplay
`;
  return shell === 'bash' ? bash : `autoload -U +X bashcompinit && bashcompinit\n${bash}`;
}
