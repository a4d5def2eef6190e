/**
 * `--set a.b=value` overrides: dotted paths into the config. Values are JSON when they parse (numbers,
 * booleans, null, quoted strings, arrays, objects), else plain strings, so `--set corpus.uri=s3://b/c.jsonl`
 * needs no quoting. A value that opens like JSON but does not parse is refused rather than kept as a string,
 * since it is almost always a shell-quoting slip.
 */
export function applySet(config: Record<string, unknown>, assignment: string): void {
  const eq = assignment.indexOf('=');
  if (eq <= 0) throw new Error(`--set ${assignment}: expected key=value, e.g. --set iterations=3`);
  const path = assignment.slice(0, eq).split('.');
  if (path.some((key) => key === ''))
    throw new Error(
      `--set ${assignment}: empty key in "${assignment.slice(0, eq)}"; keys are dotted paths such as training.optimizer.learningRate`,
    );
  const value = parseValue(assignment, assignment.slice(eq + 1));
  let node = config;
  path.slice(0, -1).forEach((key, depth) => {
    const next = node[key];
    if (next === undefined) node[key] = {};
    else if (typeof next !== 'object' || next === null || Array.isArray(next)) {
      const at = path.slice(0, depth + 1).join('.');
      throw new Error(
        `--set ${assignment}: ${at} is ${JSON.stringify(next)}, not an object; set ${at} itself, or replace it with --set '${at}={...}'`,
      );
    }
    node = node[key] as Record<string, unknown>;
  });
  node[path[path.length - 1] as string] = value;
}

function parseValue(assignment: string, raw: string): unknown {
  if (raw === '')
    throw new Error(`--set ${assignment}: empty value; for an empty string write --set '${assignment}""'`);
  try {
    return JSON.parse(raw) as unknown;
  } catch (err) {
    if (/^[[{"]/.test(raw))
      throw new Error(
        `--set ${assignment}: the value looks like JSON but does not parse (${(err as Error).message}); quote it for the shell, e.g. --set 'corpus={"uri":"s3://bucket/c.jsonl"}'`,
      );
    return raw;
  }
}
