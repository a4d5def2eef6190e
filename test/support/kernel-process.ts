import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';

const ROOT = path.resolve(__dirname, '../..');
export const KERNEL_PYTHON = path.join(ROOT, 'infra/kernels/.venv/bin/python');

/** Builds the kernel's tiny test model (random weights, locally built tokenizer) once per directory. */
export function buildTinyModel(dir = mkdtempSync(path.join(os.tmpdir(), 'tiny-model-'))): string {
  if (!existsSync(path.join(dir, 'config.json'))) {
    execFileSync(KERNEL_PYTHON, ['-m', 'selfplay_kernel', 'tiny-model', dir], { stdio: 'inherit' });
  }
  return dir;
}

/**
 * A scripted agent: the tiny model rewritten into a seeded bigram chain (test/support/scripted_model.py).
 * `chain` maps a one-token text to the texts that may follow it and their weights (`EOS` ends the message);
 * `"\n"` starts every turn (the generation prompt and each observation end with one), so e.g.
 * `{"\n": {"<search>": 3, "EOS": 1}, "<search>": {" river": 1}, " river": {"</search>": 1}}` writes
 * `<search> river</search>` three turns in four. `tokens` are added to the tokenizer as single tokens. A random
 * model never closes a search call, so only such a model drives the multi-turn search loop, its observations,
 * loss masks and `continue_final_message` requests through the real kernel.
 */
export function buildScriptedModel(spec: {
  tokens: string[];
  chain: Record<string, Record<string, number>>;
}): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'scripted-model-'));
  cpSync(pristineTinyModel(), dir, { recursive: true });
  const script = path.join(__dirname, 'scripted_model.py');
  execFileSync(KERNEL_PYTHON, [script, dir, JSON.stringify(spec)], { stdio: 'inherit' });
  return dir;
}

let pristine: string | undefined;

/** One tiny model per test file, never rewritten: each scripted model starts from a copy of it. */
const pristineTinyModel = (): string => (pristine ??= buildTinyModel());

/** The bearer token every kernel the tests start wants (the global setup sets it for the session). */
export function kernelToken(): string {
  const token = process.env.SELFPLAY_KERNEL_TOKEN;
  if (!token) throw new Error('SELFPLAY_KERNEL_TOKEN is not set: the integration global setup sets it');
  return token;
}

/** Headers that carry the kernel token, for a test's own requests to a kernel. */
export const kernelAuth = (): Record<string, string> => ({ authorization: `Bearer ${kernelToken()}` });

export interface KernelOptions {
  model: string;
  policy: string;
  env?: Record<string, string>;
  args?: string[];
  /** The port to listen on (default: a free one); a restarted kernel takes its predecessor's. */
  port?: number;
  /**
   * A Python file run instead of `-m selfplay_kernel` that calls its `main` after injecting test faults
   * (infra/kernels/tests/chaos_kernel.py).
   */
  script?: string;
}

export interface KernelProcess {
  url: string;
  /** SIGKILL simulates a crash: the kernel forgets everything not checkpointed. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Starts `python -m selfplay_kernel serve` and waits for its one JSON line saying where it listens. Like a
 * deployed kernel it wants the session's token and keeps to its storage roots: the test bucket and the
 * temporary directory.
 */
export function startKernel(options: KernelOptions): Promise<KernelProcess> {
  return startKernelCommand(
    [
      'serve',
      '--model',
      options.model,
      '--policy',
      options.policy,
      '--port',
      String(options.port ?? 0),
      '--device',
      'cpu',
      ...(options.args ?? []),
    ],
    {
      SELFPLAY_KERNEL_ROOTS: [
        ...(process.env.SELFPLAY_TEST_BUCKET ? [`s3://${process.env.SELFPLAY_TEST_BUCKET}`] : []),
        os.tmpdir(),
      ].join(','),
      ...options.env,
    },
    options.script,
  );
}

/**
 * Starts `python -m selfplay_kernel embed` (the bundled all-MiniLM-L6-v2 on the CPU) and waits for its line.
 * One PyTorch thread: on a test machine shared by parallel jobs, more threads only contend (10–20× slower).
 */
export function startEmbeddingServer(args: string[] = []): Promise<KernelProcess> {
  return startKernelCommand(['embed', '--port', '0', '--device', 'cpu', '--threads', '1', ...args]);
}

async function startKernelCommand(
  args: string[],
  env?: Record<string, string>,
  script?: string,
): Promise<KernelProcess> {
  if (!existsSync(KERNEL_PYTHON))
    throw new Error(`no kernel environment at ${KERNEL_PYTHON}: run 'bash infra/kernels/setup.sh'`);
  // This checkout's kernel code, even when the venv's editable install points at another checkout.
  const pythonPath = [path.join(ROOT, 'infra/kernels'), process.env.PYTHONPATH].filter(Boolean).join(':');
  const child: ChildProcess = spawn(
    KERNEL_PYTHON,
    [...(script ? [script] : ['-m', 'selfplay_kernel']), ...args],
    {
      env: { ...process.env, PYTHONPATH: pythonPath, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const line = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', resolve);
    void exited.then(() => reject(new Error(`the kernel exited before it was ready:\n${stderr}`)));
  });
  const { url } = JSON.parse(line) as { url: string };
  return {
    url,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
      process.off('exit', killOnExit);
    },
  };
}
