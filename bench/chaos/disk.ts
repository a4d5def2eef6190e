import { execFile } from 'node:child_process';
import { mkdir, open, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import type { S3Store } from '../../activities/clients/storage';
import { getJson } from '../../activities/clients/storage/codec';
import { latestKey } from '../../activities/clients/storage/keys';
import { delay } from '../../activities/lib/backoff';
import { isStorageFull } from '../../activities/lib/errors';
import type { LatestPointer } from '../../activities/stages/manifest';
import { progressQuery, type RunProgress } from '../../workflows/messages';
import { awaitOperatorWait, retryAsOperator, type OperatorWaitRecord } from './operator';

const run = promisify(execFile);

/** What MinIO's data directory is capped at: room for a long run's objects, and little memory to fill. */
export const MINIO_DISK_BYTES = 512 * 1024 * 1024;

/** The file that fills the disk, and that the operator's repair deletes. */
const BALLAST = 'chaos-ballast';

/**
 * A directory on a real filesystem of its own, capped in size: a tmpfs mounted there. Mounting needs root, or
 * to be root in a user namespace of one's own (`npm run chaos` re-runs itself under `unshare --user
 * --map-root-user --mount` when it is not root); anything else fails loudly, saying so, since the `fill-disk`
 * fault cannot be injected without it.
 */
export class CappedDisk {
  private constructor(
    readonly dir: string,
    readonly bytes: number,
  ) {}

  static async mount(dir: string, bytes: number): Promise<CappedDisk> {
    await mkdir(dir, { recursive: true });
    try {
      await run('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir]);
    } catch (err) {
      throw new Error(
        `the chaos suite's fill-disk fault needs a size-capped filesystem for MinIO's data, and mounting a ` +
          `${bytes / 2 ** 20} MiB tmpfs on ${dir} failed (${String(err).trim()}): run it as root, or under ` +
          '`unshare --user --map-root-user --mount` where user namespaces are allowed',
      );
    }
    return new CappedDisk(dir, bytes);
  }

  /**
   * Fills every byte left with a ballast file, as a neighbour's files or a run's own growth would: written until
   * the filesystem refuses (ENOSPC), in smaller pieces as it nears full, since MinIO writes beside it meanwhile.
   */
  async fill(): Promise<void> {
    const ballast = await open(path.join(this.dir, BALLAST), 'a');
    try {
      for (const piece of [2 ** 20, 2 ** 12]) {
        const zeros = Buffer.alloc(piece);
        for (;;) {
          const written = await ballast.write(zeros).catch((err: unknown) => {
            if ((err as { code?: unknown }).code === 'ENOSPC') return undefined;
            throw err;
          });
          if (written === undefined) break;
        }
      }
    } finally {
      await ballast.close();
    }
  }

  /** The operator's repair: the ballast deleted. */
  async drain(): Promise<void> {
    await rm(path.join(this.dir, BALLAST), { force: true });
  }

  /** Lazily: a process that still has a file open there (a MinIO being killed) does not keep it mounted. */
  async unmount(): Promise<void> {
    await run('umount', ['-l', this.dir]);
  }
}

export interface DiskFillContext {
  client: Client;
  store: S3Store;
  disk: CappedDisk;
  /** The run being driven now, and its iterations. */
  currentRun: () => string | undefined;
  iterations: number;
  /** How long the run may take to wait for its operator once the disk is full. */
  operatorBoundMs: number;
  deadline: number;
  log: (line: string) => void;
}

/**
 * `fill-disk`: MinIO's drive filled while a run has iterations left. Its next write is answered
 * `XMinioStorageFull` (507), the activity fails `StorageFull`, non-retryably, and the run waits for its
 * operator with that cause (the next run, when the current one had just committed its last iteration). The
 * operator deletes the ballast and retries.
 */
export async function fillDiskAndRepair(context: DiskFillContext): Promise<OperatorWaitRecord> {
  const kind = 'fill-disk';
  const { client, disk, log } = context;
  for (;;) {
    if (Date.now() > context.deadline) throw new Error(`${kind}: no run in flight before the deadline`);
    const runId = context.currentRun();
    const latest = runId ? await getJson<LatestPointer>(context.store, latestKey(runId)) : undefined;
    if (runId && (latest?.iteration ?? 0) < context.iterations) break;
    await delay(250);
  }
  await disk.fill();
  log(`${kind}: ${disk.dir} filled`);
  const { runId, ...record } = await awaitOperatorWait(
    client,
    { kind, key: disk.dir, runId: context.currentRun },
    context.operatorBoundMs,
  );
  await disk.drain();
  const repair = async (): Promise<void> => {
    await awaitWritable(context.store, context.deadline);
    await retryAsOperator(client, runId, kind, log);
  };
  if (!runId || !record.cause) {
    await repair();
    return record;
  }
  const handle = client.workflow.getHandle(runId);
  const retries = await retryUntilCommitted(
    { progress: () => handle.query(progressQuery).catch(() => undefined), repair },
    record.cause.iteration,
    { maxRetries: FILL_DISK_RETRIES, deadline: context.deadline, log },
  );
  return { ...record, retries };
}

/** How many times the operator retries a run that waits again on the full disk before giving up on it. */
const FILL_DISK_RETRIES = 5;

/** What `retryUntilCommitted` reads and does: the run's progress, and the operator's write check then retry. */
export interface RetryWatch {
  progress: () => Promise<RunProgress | undefined>;
  repair: () => Promise<void>;
}

/**
 * The operator's repair, followed until the failed iteration commits: when the run waits again on a full disk
 * first, storage is checked and the run retried again, up to `maxRetries` retries in all. MinIO answered the
 * check's small write and then refused the retried iteration's own (the long kernel run of seed 12, fault 41:
 * it rereads its drive's free space on its own clock), so one retry left the run waiting, and the suite too.
 * Returns the retries sent; any other cause or state is left to the suite's next look.
 */
export async function retryUntilCommitted(
  watch: RetryWatch,
  iteration: number,
  { maxRetries, deadline, log }: { maxRetries: number; deadline: number; log: (line: string) => void },
): Promise<number> {
  let retries = 0;
  for (;;) {
    await watch.repair();
    retries++;
    for (;;) {
      const progress = await watch.progress();
      if (progress && (progress.lastCommitted >= iteration || progress.state === 'completed')) return retries;
      if (progress?.state === 'needsOperator') {
        if (progress.failure?.type !== 'StorageFull') return retries;
        break;
      }
      if (Date.now() > deadline) return retries;
      await delay(250);
    }
    if (retries >= maxRetries) {
      log(`fill-disk: the run still waits on a full disk after ${retries} retries`);
      return retries;
    }
    log(`fill-disk: the run waits on a full disk again after retry ${retries}; retrying`);
  }
}

/** Where the operator's check writes, under the suite's own prefix of the bucket. */
const PROBE_KEY = 'chaos/writable-probe';

/**
 * Until storage takes a write again, as an operator checks before `selfplay retry`: MinIO answers
 * `XMinioStorageFull` for a moment after space is freed (it rereads its drive's free space on its own clock), and
 * a retry sent in that moment fails the same way and leaves the run waiting again.
 */
async function awaitWritable(store: S3Store, deadline: number): Promise<void> {
  for (;;) {
    try {
      await store.put(PROBE_KEY, 'ok');
      await store.delete(PROBE_KEY);
      return;
    } catch (err) {
      if (!isStorageFull(err) || Date.now() > deadline) throw err;
      await delay(250);
    }
  }
}
