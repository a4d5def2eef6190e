import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const REPO_ROOT = path.resolve(__dirname, '../..');

/** A Go-built tool from `infra/local/tools.sh`, or an error that says how to build it. */
export function toolBinary(name: 'temporal' | 'minio'): string {
  const dir = process.env.SELFPLAY_TOOLS_DIR ?? path.join(REPO_ROOT, '.tools');
  const file = path.join(dir, 'bin', name);
  if (!existsSync(file)) {
    throw new Error(
      `${name} not found at ${file}: run \`bash infra/local/tools.sh\` (needs Go and the module proxy)`,
    );
  }
  return file;
}

/** A temp dir deleted when this process exits, so a server restarted mid-test still finds its state. */
export function tempDirForProcess(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

type Unrefable = { unref(): void };

/** A server child process whose recent output is kept for error messages. */
export class ServerProcess {
  private readonly child: ChildProcess;
  /**
   * Settles when the process has exited, however it ended (a supervisor restarts what died on its own), with how
   * it ended: `exited (code 1, signal null)`, or `failed to start: ...`.
   */
  readonly exited: Promise<string>;
  private output = '';
  private exitDescription: string | undefined;

  constructor(
    readonly name: string,
    command: string,
    args: readonly string[],
    env: NodeJS.ProcessEnv = process.env,
  ) {
    this.child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (chunk: Buffer): void => {
      this.output = (this.output + chunk.toString('utf8')).slice(-16_000);
    };
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) => {
      this.child.once('error', (err) => {
        this.exitDescription = `failed to start: ${err.message}`;
        resolve(this.exitDescription);
      });
      this.child.once('exit', (code, signal) => {
        this.exitDescription = `exited (code ${code}, signal ${signal})`;
        resolve(this.exitDescription);
      });
    });
    // A server a test forgot to stop must neither keep the runner alive nor outlive it.
    for (const handle of [this.child, this.child.stdout, this.child.stderr])
      (handle as Unrefable | null)?.unref();
    const killOnExit = (): void => void this.child.kill('SIGKILL');
    process.once('exit', killOnExit);
    void this.exited.then(() => process.off('exit', killOnExit));
  }

  /** The process id (undefined if it failed to start): what a Temporal worker's identity `host:pid/...` names. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Polls `probe` until it answers true; fails early when the server dies, with its last output. */
  async waitUntilReady(probe: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let lastError = '';
    for (;;) {
      if (this.exitDescription) throw this.failure(this.exitDescription);
      try {
        if (await probe()) return;
      } catch (err) {
        lastError = String(err);
      }
      if (Date.now() > deadline)
        throw this.failure(`not ready after ${timeoutMs} ms (last probe: ${lastError})`);
      await sleep(150);
    }
  }

  /** Sends `signal` (SIGKILL simulates a crash) and waits for exit, escalating to SIGKILL after a grace period. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 15_000): Promise<void> {
    if (this.exitDescription) return;
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  private failure(what: string): Error {
    return new Error(`${this.name} ${what}. Its last output:\n${this.output.slice(-4_000)}`);
  }
}
