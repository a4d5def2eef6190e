/** `--set a.b=value` overrides: dotted paths into the config; values are JSON when they parse, else strings. */
export function applySet(config: Record<string, unknown>, assignment: string): void {
  const eq = assignment.indexOf('=');
  if (eq <= 0) throw new Error(`--set ${assignment}: expected key=value, e.g. --set iterations=3`);
  const path = assignment.slice(0, eq).split('.');
  const raw = assignment.slice(eq + 1);
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    // not JSON: keep the string
  }
  let node = config;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (next === undefined) node[key] = {};
    else if (typeof next !== 'object' || next === null || Array.isArray(next)) {
      throw new Error(`--set ${assignment}: ${key} is not an object in the config`);
    }
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1] as string] = value;
}

/** Minimal flag parser: `--flag value`, repeated flags collect, bare words are positionals. */
export function parseFlags(argv: string[]): {
  positionals: string[];
  flags: Map<string, string[]>;
  switches: Set<string>;
} {
  const positionals: string[] = [];
  const flags = new Map<string, string[]>();
  const switches = new Set<string>();
  const takesValue = new Set([
    '--config',
    '--set',
    '--id',
    '--recipe',
    '--iteration',
    '--out',
    '--corpus',
    '--kind',
    '--embedding-url',
    '--embedding-model',
  ]);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (takesValue.has(arg)) {
      const value = argv[++i];
      if (value === undefined) throw new Error(`${arg} needs a value`);
      flags.set(arg, [...(flags.get(arg) ?? []), value]);
    } else if (arg.startsWith('--')) {
      switches.add(arg);
    } else {
      positionals.push(arg);
    }
  }
  return { positionals, flags, switches };
}
