import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { iterationPrefix, manifestKey, runPrefix } from '../../activities/clients/storage/keys';
import type { Manifest } from '../../contracts/selfplay';
import { freePort } from '../support/free-port';
import { buildTinyModel } from '../support/kernel-process';
import { waitFor } from '../support/wait';

const ROOT = path.resolve(__dirname, '../..');
const ITERATIONS = 3;
/** The session's servers and a test stack's settings, which the local stack must not take for its own. */
const NOT_INHERITED = [
  'TEMPORAL_ADDRESS',
  'SELFPLAY_STORAGE',
  'SELFPLAY_QUEUE_PREFIX',
  'SELFPLAY_LOCAL_ENGINE',
];

/**
 * `npm run local` after a crash, as a new user meets it: the local stack (infra/local/run-local.sh with its own
 * Temporal dev server, the kernel on the tiny model and a worker) is killed, process group and all, as soon as
 * iteration 1 has committed; a plain `npm run local` again resumes that run rather than starting another, and it
 * completes with every iteration committed once, each trained once on the version before it.
 */
describe('npm run local resumes a crashed local run', () => {
  let stateDir: string;
  let env: NodeJS.ProcessEnv;
  let model: string;
  const stacks: LocalStack[] = [];
  beforeAll(async () => {
    model = buildTinyModel();
    stateDir = mkdtempSync(path.join(os.tmpdir(), 'selfplay-local-'));
    // Its own Temporal dev server on free ports, state under stateDir: not the session's server, not .selfplay/.
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !NOT_INHERITED.includes(name)),
    );
    env = {
      ...inherited,
      SELFPLAY_STATE_DIR: stateDir,
      SELFPLAY_MODEL: model,
      TEMPORAL_PORT: String(await freePort()),
      TEMPORAL_UI_PORT: String(await freePort()),
    };
  });
  afterAll(async () => {
    for (const stack of stacks) stack.kill();
    await runScript(['infra/local/temporal.sh', 'stop'], env);
    rmSync(stateDir, { recursive: true, force: true });
  });

  test('killed after iteration 1 commits, the next npm run local resumes the same run to its end', async () => {
    // The tiny model writes no valid task; REINFORCE (no baseline) makes each iteration a real training step.
    const settings = {
      iterations: ITERATIONS,
      'training.estimator': 'reinforce',
      batchSize: 2,
      shardSize: 2,
      groupSize: 2,
      'sampling.maxTokens': 16,
      'spice.maxAttempts': 2,
      'corpus.uri': 'test/fixtures/corpus/small.jsonl',
      'corpus.maxSegmentChars': 600,
    };
    const args = Object.entries(settings).flatMap(([key, value]) => ['--set', `${key}=${value}`]);
    const first = startLocal(args, env);
    stacks.push(first);
    let runId = '';
    await first.waitFor(
      'the new run',
      () => (runId = /starting new run (\S+)/.exec(first.output())?.[1] ?? '') !== '',
    );
    const storage = path.join(stateDir, 'storage');
    const manifestFile = (k: number): string => path.join(storage, manifestKey(runId, k));
    await first.waitFor('iteration 1 committed', () => existsSync(manifestFile(1)), 600_000);
    const committedFirst = readFileSync(manifestFile(1), 'utf8');
    first.kill();
    await first.gone();

    const second = startLocal(args, env);
    stacks.push(second);
    const code = await second.waitForExit(600_000);
    const out = second.output();
    expect(`exit ${code}\n${out}`).toMatch(/^exit 0\n/);
    expect(out).not.toMatch(/starting new run/);
    // From iteration 2, or 1 when the kill came between iteration 1's commit and the run recording it: then
    // the run commits iteration 1 again, which finds its manifest written and keeps it.
    const resumedFrom = new RegExp(`resuming run ${runId} from iteration (\\d+)`).exec(out)?.[1];
    expect(['1', '2']).toContain(resumedFrom);
    expect(out).toContain(`run ${runId} completed: ${ITERATIONS} iterations committed, local v${ITERATIONS}`);

    // One run, its iterations 1..N committed once each, iteration k at version k (no step lost or applied twice).
    expect(readdirSync(path.join(storage, 'runs'))).toEqual([runId]);
    const iterations = readdirSync(path.join(storage, runPrefix(runId))).filter((name) =>
      name.startsWith('iter-'),
    );
    expect(iterations).toEqual(
      Array.from({ length: ITERATIONS }, (_, i) => path.basename(iterationPrefix(runId, i + 1))),
    );
    for (let k = 1; k <= ITERATIONS; k++) {
      const manifest = JSON.parse(readFileSync(manifestFile(k), 'utf8')) as Manifest;
      expect({ k, version: manifest.policies.local?.version }).toEqual({ k, version: k });
    }
    expect(readFileSync(manifestFile(1), 'utf8')).toBe(committedFirst);
    expect(existsSync(path.join(stateDir, 'reports', `${runId}.html`))).toBe(true);
  }, 1_200_000);
});

interface LocalStack {
  output(): string;
  /** Waits for `condition`; fails at once, with the output, when the stack exits first. */
  waitFor(what: string, condition: () => boolean, timeoutMs?: number): Promise<void>;
  waitForExit(timeoutMs: number): Promise<number | null>;
  /** SIGKILL to its whole process group: the script, Temporal, the kernel, the worker, the CLI. */
  kill(): void;
  /** Waits until no process of the group is left, zombies included (a pid file would still name one). */
  gone(): Promise<void>;
}

/** `npm run local -- ARGS` in a process group of its own, as a terminal runs it. */
function startLocal(args: string[], env: NodeJS.ProcessEnv): LocalStack {
  const child: ChildProcess = spawn('bash', ['infra/local/run-local.sh', ...args], {
    cwd: ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let code: number | null | undefined;
  child.once('exit', (c) => (code = c));
  const kill = (): void => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // The group has ended already.
    }
  };
  process.once('exit', kill);
  return {
    output: () => output,
    kill,
    gone: () => waitFor('the killed stack to be gone', () => !groupAlive(child.pid!), 30_000, 100),
    waitFor: (what, condition, timeoutMs = 120_000) =>
      waitFor(
        what,
        () => {
          if (code !== undefined)
            throw new Error(`npm run local exited (${code}) before ${what}:\n${output}`);
          return condition();
        },
        timeoutMs,
        200,
      ),
    waitForExit: async (timeoutMs) => {
      await waitFor('npm run local to exit', () => code !== undefined, timeoutMs, 200).catch((err: Error) => {
        throw new Error(`${err.message}; its output:\n${output}`);
      });
      return code ?? null;
    },
  };
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A local-stack script run to its end. */
function runScript(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve) =>
    spawn('bash', args, { cwd: ROOT, env, stdio: 'ignore' }).once('exit', () => resolve()),
  );
}
