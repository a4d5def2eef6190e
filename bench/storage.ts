import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { weightVersionOf } from '../activities/clients/storage/keys';
import { resolveRunConfig } from '../config/schema';
import { selfPlayRun } from '../workflows';
import { progressQuery, type RunProgress } from '../workflows/messages';
import { buildTinyModel } from '../test/support/kernel-process';
import { tinySpice, withKernelRun } from '../test/support/kernel-run';
import { startTemporalDevServer } from '../test/support/temporal-server';

/**
 * `npm run bench -- storage [--iterations N] [--keep-last K|all] [--keep-every M]`: what a run leaves in
 * storage per iteration under `training.retention` (the run config's defaults unless given). One SPICE run of
 * N iterations (default 50) on a local stack: a Temporal dev server, local-directory storage, the kernel's
 * tiny model (hidden 64, 2 layers: real checkpoints with optimizer state, real snapshots, the kernel's
 * sampler synced to each version) and a worker process. After each commit's retention has run (the run has
 * started the next iteration, or completed), it sums the bytes stored for the commits so far: checkpoints,
 * snapshots and the rest (stage outputs, batches, manifests), and the versions kept. Last line
 * `storage_bytes_per_iteration_tail <bytes>`: the growth per iteration once retention deletes (after
 * iteration K + 1; from iteration 1 with `all`).
 */
export async function main(args: string[]): Promise<void> {
  const option = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const iterations = Number(option('--iterations') ?? 50);
  const keepLastArg = option('--keep-last');
  const keepLast = keepLastArg === undefined || keepLastArg === 'all' ? keepLastArg : Number(keepLastArg);
  const keepEvery = option('--keep-every');
  if (!Number.isInteger(iterations) || iterations < 2) throw new Error('--iterations: an integer ≥ 2');
  const resolved = resolveRunConfig({
    recipe: 'spice',
    training: {
      retention: {
        ...(keepLast === undefined ? {} : { keepLast }),
        ...(keepEvery === undefined ? {} : { keepEvery: Number(keepEvery) }),
      },
    },
  });
  if (!resolved.ok) throw new Error(resolved.problems.join('; '));
  const { retention } = resolved.config.training;

  const t0 = Date.now();
  // The kernels this bench starts refuse requests without a token, as in production.
  process.env.SELFPLAY_KERNEL_TOKEN ??= randomBytes(24).toString('hex');
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'bench-storage-'));
  const temporal = await startTemporalDevServer({ dbFile: path.join(scratch, 'temporal.db') });
  process.env.TEMPORAL_ADDRESS = temporal.address;
  const model = buildTinyModel(path.resolve('.selfplay/bench/tiny-model'));
  const measured: Stored[] = [];
  try {
    await withKernelRun(
      {
        model,
        name: 'storage',
        policies: (runId) => [runId],
        storageUri: (runId) => path.join(scratch, 'storage', runId),
      },
      async (run) => {
        const spice = tinySpice(run.runId);
        const config = {
          ...run.baseConfig,
          ...spice,
          iterations,
          training: { ...spice.training, retention },
        };
        const started = await run.client.workflow.start(selfPlayRun, {
          workflowId: run.runId,
          taskQueue: (run.baseConfig['pools'] as { orchestrator: string }).orchestrator,
          args: [config],
        });
        const latest = run.client.workflow.getHandle(run.runId);
        const outcome = started.result();
        let done = false;
        void outcome.finally(() => (done = true));
        console.log('iteration  stored bytes  checkpoints  snapshots  the rest  versions kept');
        while (measured.length < iterations) {
          const progress = await latest.query(progressQuery).catch(() => undefined);
          const head = progress?.lastCommitted ?? 0;
          // A commit's retention has run once the next iteration started, or the run completed.
          if (progress && head > (measured.at(-1)?.iteration ?? 0) && retained(progress)) {
            const stored = await storedBytes(run.storageUri, head, progress.versions[run.runId] ?? head);
            measured.push(stored);
            console.log(row(stored));
          } else if (done) {
            break;
          }
          await delay(250);
        }
        await outcome;
      },
    );
  } finally {
    await temporal.stop();
    await rm(scratch, { recursive: true, force: true });
  }
  const last = measured.at(-1);
  if (!last || last.iteration < iterations)
    throw new Error(`the run completed after ${last?.iteration ?? 0} of ${iterations} iterations`);
  // From commit K + 1 on, each commit adds a version and retention deletes one (the base snapshot went at K).
  const steady = retention.keepLast === 'all' ? 1 : retention.keepLast + 1;
  const from = measured.find((m) => m.iteration === steady);
  if (!from || last.iteration <= from.iteration)
    throw new Error(
      `--iterations: more than ${steady} are needed (the growth is measured from commit ${steady} on)`,
    );
  const tail = (last.total - from.total) / (last.iteration - from.iteration);
  console.log(
    `retention ${JSON.stringify(retention)}, ${iterations} iterations in ${((Date.now() - t0) / 1000).toFixed(0)} s; ` +
      `one version (checkpoint + snapshot) ${bytes(last.lastVersion)}, the rest of an iteration ` +
      `${bytes((last.rest - from.rest) / (last.iteration - from.iteration))}`,
  );
  console.log(`storage_bytes_per_iteration_tail ${Math.round(tail)}`);
}

interface Stored {
  iteration: number;
  total: number;
  checkpoints: number;
  snapshots: number;
  rest: number;
  /** Versions with a checkpoint or a snapshot stored. */
  versions: number[];
  /** The checkpoint and snapshot of the head's version. */
  lastVersion: number;
}

const retained = (p: RunProgress): boolean => p.state === 'completed' || p.iteration > p.lastCommitted;

/**
 * The bytes under the storage directory that belong to the commits up to `head`: an iteration started
 * since (its stage outputs, the version it trains) is left out.
 */
async function storedBytes(root: string, head: number, headVersion: number): Promise<Stored> {
  const stored: Stored = {
    iteration: head,
    total: 0,
    checkpoints: 0,
    snapshots: 0,
    rest: 0,
    versions: [],
    lastVersion: 0,
  };
  const versions = new Set<number>();
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    const key = path.relative(root, file).split(path.sep).join('/');
    const iteration = /^runs\/[^/]+\/iter-(\d+)\//.exec(key)?.[1];
    const version = weightVersionOf(key);
    if ((iteration && Number(iteration) > head) || (version && version.version > headVersion)) continue;
    // Deleted by the retention of a later commit or a temp file renamed meanwhile: not there any more.
    const size = await stat(file).then(
      (s) => s.size,
      () => undefined,
    );
    if (size === undefined) continue;
    stored.total += size;
    if (!version) stored.rest += size;
    else {
      versions.add(version.version);
      if (key.includes('/checkpoints/')) stored.checkpoints += size;
      else stored.snapshots += size;
      if (version.version === headVersion) stored.lastVersion += size;
    }
  }
  stored.versions = [...versions].sort((a, b) => a - b);
  return stored;
}

const bytes = (n: number): string => `${(n / 1024 ** 2).toFixed(2)} MiB`;

const row = (s: Stored): string =>
  `${String(s.iteration).padStart(9)}  ${bytes(s.total).padStart(12)}  ${bytes(s.checkpoints).padStart(11)}  ` +
  `${bytes(s.snapshots).padStart(9)}  ${bytes(s.rest).padStart(8)}  ${s.versions.join(',')}`;
