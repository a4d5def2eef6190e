import { spawn } from 'node:child_process';
import path from 'node:path';

/** The Python with the kernel package: SELFPLAY_PYTHON, else the clone's kernel environment. */
export const kernelPython = (env: NodeJS.ProcessEnv = process.env): string =>
  env.SELFPLAY_PYTHON || path.resolve(__dirname, '../../infra/kernels/.venv/bin/python');

/**
 * Runs `python -m {module} ...args` (a module of the kernel package, with the Python that has it installed),
 * with `input` on its stdin; resolves its stdout, rejects with the tail of its stderr when it fails.
 */
export function runPythonModule(
  python: string,
  module: string,
  args: readonly string[],
  options: { input?: string; env?: NodeJS.ProcessEnv; what: string },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, ['-m', module, ...args], {
      env: options.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    child.on('error', (err) => reject(new Error(`${options.what}: cannot start ${python}: ${err.message}`)));
    child.on('close', (code) =>
      code === 0
        ? resolve(stdout)
        : reject(new Error(`${options.what}: ${python} -m ${module} exited with ${code}: ${stderr.trim()}`)),
    );
    child.stdin.end(options.input ?? '');
  });
}
