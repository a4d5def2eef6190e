/**
 * The flags each command takes. `parseFlags` (args.ts) knows every flag of the CLI; a flag that is not its
 * command's is refused here with the command's usage, so `selfplay pause RUN --cron x` says that pause takes
 * no --cron instead of pausing. Commands with a usage text of their own take the flags that text names.
 */
const OWN_FLAGS: Readonly<Record<string, readonly string[]>> = {
  start: ['--recipe', '--config', '--set', '--id', '--wait'],
  list: ['--recipe', '--state', '--limit'],
  status: ['--watch'],
  follow: [],
  pause: [],
  resume: [],
  stop: [],
  retry: [],
  set: ['--set'],
  rollback: ['--to'],
  fork: ['--from', '--id', '--set'],
  state: ['--iteration'],
  report: ['--out'],
};

/** Every `--flag` a usage text names. */
export const flagsNamedIn = (usage: string): string[] => [...new Set(usage.match(/--[a-z][a-z-]*/g) ?? [])];

/**
 * Why `used` flags cannot go with `command` (undefined when they can). `usages` are the usage texts of the
 * commands that have one; `--help` goes with every command.
 */
export function foreignFlagProblem(
  command: string,
  used: readonly string[],
  usages: Readonly<Record<string, string>>,
): string | undefined {
  const own =
    OWN_FLAGS[command] ?? (usages[command] === undefined ? undefined : flagsNamedIn(usages[command]));
  if (own === undefined) return undefined;
  const foreign = used.filter((flag) => flag !== '--help' && !own.includes(flag));
  if (foreign.length === 0) return undefined;
  const takes = own.length ? `it takes ${own.join(', ')}` : 'it takes no flags';
  return `${command} does not take ${foreign.join(', ')}; ${takes}`;
}

/**
 * The lines of the CLI's usage that describe `command`: each entry that starts with it (or names it among
 * `a RUN_ID | b RUN_ID` alternatives) and the indented lines under it.
 */
export function usageEntry(usage: string, command: string): string | undefined {
  const starts = new RegExp(`^  (\\S+ [A-Z_]+ \\| )*${command}( |$)`);
  const entry: string[] = [];
  let inside = false;
  for (const line of usage.split('\n')) {
    if (starts.test(line)) inside = true;
    else if (!/^ {3,}/.test(line)) inside = false;
    if (inside) entry.push(line);
  }
  return entry.length ? entry.join('\n') : undefined;
}
