import { execFile } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
/** `npx selfplay` from a clone: the TypeScript CLI through tsx. */
export const CLI = path.join(ROOT, 'cli/bin.js');

export interface CliResult {
  /** The exit status: 0, or 1 for a refusal or a usage error. */
  code: number;
  stdout: string;
  stderr: string;
  /** stdout then stderr. */
  out: string;
}

/**
 * `selfplay ARGS` as an operator runs it: a process of its own, with no terminal (so `status` prints one
 * snapshot), in the repository root, with this process's environment plus `env` (e.g. a stack's `cliEnv`:
 * its Temporal server and storage). Resolves whatever the exit status; a test asserts on `code`.
 */
export function selfplay(args: readonly string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { cwd: ROOT, env: { ...process.env, ...env } },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr, out: stdout + stderr }),
    );
  });
}
