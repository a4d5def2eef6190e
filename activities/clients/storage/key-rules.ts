/**
 * Both stores accept the same keys, so a run written to a local directory can move to S3 unchanged and a
 * key can never climb out of a local root.
 */
export function assertValidKey(key: string): void {
  const problem = keyProblem(key);
  if (problem) {
    throw new Error(
      `storage key ${JSON.stringify(key)} is invalid: ${problem}; use relative '/'-separated keys such as 'runs/r1/latest.json'`,
    );
  }
}

/** A list prefix is a key or the start of one: '' lists everything. */
export function assertValidPrefix(prefix: string): void {
  if (prefix === '') return;
  const problem = keyProblem(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix);
  if (problem) throw new Error(`storage prefix ${JSON.stringify(prefix)} is invalid: ${problem}`);
}

function keyProblem(key: string): string | undefined {
  if (key === '') return 'it is empty';
  if (key.startsWith('/')) return 'it is absolute';
  if (key.includes('\\')) return 'it contains a backslash';
  if (key.includes('\u0000')) return 'it contains a NUL byte';
  const segments = key.split('/');
  if (segments.some((s) => s === '')) return 'it has an empty path segment';
  if (segments.some((s) => s === '.' || s === '..')) return "it has a '.' or '..' segment";
  return undefined;
}

/** A byte range [start, end) of an object: non-negative integers, end after start. */
export function assertRange(start: number, end: number): void {
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end <= start) {
    throw new RangeError(`byte range [${start}, ${end}) is invalid: expected integers 0 <= start < end`);
  }
}
