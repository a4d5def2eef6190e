import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { getJson, getJsonl } from '../../activities/clients/storage/codec';
import { batchKey, manifestKey } from '../../activities/clients/storage/keys';
import type { ObjectStore } from '../../activities/clients/storage';
import type { TrainingRow } from '../../activities/clients/trainer-contract';
import type { Manifest } from '../../contracts/selfplay';
import { delay } from '../../activities/lib/backoff';
import { startKernel, type KernelProcess } from '../../test/support/kernel-process';
import { committedWeights, replayCommitted, type CommittedRun } from '../../test/support/kernel-replay';
import { maxAbsDiff } from '../../test/support/safetensors';

const ROOT = path.resolve(__dirname, '../..');

/** The kernel with faults on demand inside a train step (its doc says how). */
const CHAOS_KERNEL = path.join(ROOT, 'infra/kernels/tests/chaos_kernel.py');

/**
 * One PyTorch thread in the run's kernel and the replay's: each sums in one fixed order, so the same steps on the
 * same bits give the same bits and the weights compare exactly (as in kernel-chaos.test.ts).
 */
const ONE_THREAD = { OMP_NUM_THREADS: '1' };

/** The faults the chaos kernel takes inside a step: a mini-batch that raises, a step held for a SIGKILL. */
export type KernelFault = 'raise' | 'hold';

/**
 * The real PyTorch kernel (its tiny model) as the chaos suite's trainer and sampler (`--trainer kernel`). A
 * kernel holds one policy, and each chaos run trains its own, so `serve` starts a fresh kernel for each run, on
 * the same port; `kill` and `start` are a crash and a supervisor's restart (from the model's base weights: the
 * run's update restores its last committed checkpoint).
 */
export class ChaosKernel {
  private process: KernelProcess | undefined;
  private policy: string | undefined;
  /**
   * Starts, kills and serves one at a time: a kernel takes a minute or more to start on a loaded machine, and a
   * fault's kill must not miss a kernel still starting, nor its restart race another start for the port.
   */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly model: string,
    private readonly port: number,
    /** The kernel's environment: S3 endpoint, storage roots. */
    private readonly env: Record<string, string>,
    private readonly faultLog: string,
    private readonly armFile: string,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** A fresh kernel for the run training `policy`. */
  serve(policy: string): Promise<void> {
    return this.inTurn(async () => {
      await this.stop();
      this.policy = policy;
      await this.launch();
    });
  }

  start(): Promise<void> {
    return this.inTurn(() => this.launch());
  }

  kill(): Promise<void> {
    return this.inTurn(() => this.stop());
  }

  private inTurn(operation: () => Promise<void>): Promise<void> {
    const turn = this.queue.then(operation);
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private async launch(): Promise<void> {
    if (this.policy === undefined || this.process) return;
    this.process = await startKernel({
      model: this.model,
      policy: this.policy,
      port: this.port,
      script: CHAOS_KERNEL,
      env: {
        ...ONE_THREAD,
        ...this.env,
        SELFPLAY_TEST_FAULT_LOG: this.faultLog,
        SELFPLAY_TEST_ARM_FILE: this.armFile,
      },
    });
  }

  private async stop(): Promise<void> {
    await this.process?.stop('SIGKILL');
    this.process = undefined;
  }

  /**
   * Arms `fault` for the kernel's next mini-batch 2 or later and waits until it fired: true, or false once
   * `withinMs` passed without a step to take it (the fault is disarmed).
   */
  async fire(fault: KernelFault, withinMs: number): Promise<boolean> {
    const before = this.fired(fault);
    // Written whole, then renamed: the kernel never reads half a word.
    writeFileSync(`${this.armFile}.tmp`, fault);
    renameSync(`${this.armFile}.tmp`, this.armFile);
    const until = Date.now() + withinMs;
    while (Date.now() < until) {
      if (this.fired(fault) > before) return true;
      await delay(100);
    }
    if (existsSync(this.armFile)) writeFileSync(this.armFile, '');
    return this.fired(fault) > before;
  }

  private fired(fault: KernelFault): number {
    if (!existsSync(this.faultLog)) return 0;
    return readFileSync(this.faultLog, 'utf8')
      .split('\n')
      .filter((line) => line && (JSON.parse(line) as { fault: string }).fault === fault).length;
  }
}

/** What the replays found: versions whose committed weights equal a clean replay's, of all compared. */
export interface ReplayCheck {
  runId: string;
  versions: number;
  equal: number;
  /** The iterations whose committed version equals the replay's. */
  equalIterations: number[];
}

/**
 * The check on the weights: a fresh kernel without faults applies the batches `runId` committed (iterations
 * 1..`iterations`), in order, once each, and every committed checkpoint must equal the replay's version
 * exactly (kernel-replay.ts). Any difference is a mini-batch of a failed attempt left in the weights, or a step
 * applied twice.
 */
export async function checkAgainstReplay(
  store: ObjectStore,
  runId: string,
  config: Record<string, unknown>,
  iterations: number,
  model: string,
  env: Record<string, string>,
): Promise<ReplayCheck> {
  const run: CommittedRun = {
    runId,
    store,
    manifest: (iteration) => getJson<Manifest>(store, manifestKey(runId, iteration)),
    rows: async (iteration, policy) =>
      (await getJsonl<TrainingRow>(store, batchKey(runId, iteration, policy))) ?? [],
  };
  const fresh = await startKernel({ model, policy: runId, env: { ...ONE_THREAD, ...env } });
  try {
    const replayed = await replayCommitted(run, config, iterations, fresh, runId);
    const equalIterations: number[] = [];
    for (let iteration = 1; iteration <= iterations; iteration++) {
      const uri = (await run.manifest(iteration))?.policies[runId]?.checkpointUri;
      if (uri && maxAbsDiff(await committedWeights(run, uri), replayed[iteration - 1]!) === 0)
        equalIterations.push(iteration);
    }
    return { runId, versions: iterations, equal: equalIterations.length, equalIterations };
  } finally {
    await fresh.stop('SIGKILL');
  }
}
