import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { access, mkdir, readdir, readFile, rename, rm, rmdir, stat, utimes } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { NON_RETRYABLE, nonRetryable } from '../../lib/errors';
import { openStore, type ObjectStore } from '../storage';
import type { SnapshotRef } from './types';
import { forEachLimited } from '../../lib/concurrency';
import { COMPLETE_MARKER } from '../trainer-contract';

const DEFAULT_CACHE_DIR = '.selfplay/snapshots';
/**
 * The default cap, in GiB: a quarter of the chart's 200 Gi snapshot volume, room for about twenty full
 * snapshots of a 0.6 B model or thousands of LoRA adapters, while the servers need only the versions they
 * serve now (the current one, and on vLLM the previous one, per policy and run).
 */
const DEFAULT_MAX_GIB = 50;
const GIB = 1024 ** 3;
const PARALLEL_DOWNLOADS = 4;

/** The snapshot's objects cannot be fetched (store down, object gone): not the fault of any one server. */
export class SnapshotUnavailable extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SnapshotUnavailable';
  }
}

export interface SnapshotCacheOptions {
  /** The cache root (SELFPLAY_SNAPSHOT_CACHE, else `.selfplay/snapshots`); the engines' hosts must see it. */
  dir?: string;
  /**
   * The most bytes the complete copies may take (SELFPLAY_SNAPSHOT_CACHE_MAX_GIB GiB, else 50 GiB): after each
   * new copy, the least recently used others are deleted until the cache fits.
   */
  maxBytes?: number;
  /** Opens the store rooted at an `s3://` snapshot's prefix (tests pass a LocalStore). */
  openStore?: (uri: string) => ObjectStore;
}

/**
 * vLLM and SGLang load from a path on their own host, so a snapshot published to S3 is copied once into a
 * cache on the shared filesystem: `{dir}/{policy}/v{N}/{hash of the URI and the weights' digest}/`. The URI
 * keeps two runs that share a policy name (and so version numbers) from ever reading each other's weights;
 * the digest (`SnapshotRef.sha256`) keeps weights published again at the same URI (a step applied again)
 * from ever being served from the copy of the old ones: they are copied anew. A snapshot from before digests
 * is keyed by its URI alone, as then. A copy's `COMPLETE` marker must name the digest asked for, else the
 * snapshot is refused (it was published again since). The copy is made in a temp directory and renamed into
 * place, so a directory at that path is always complete. Objects are streamed to their files, never held
 * whole in memory (a full model's shards are gigabytes).
 *
 * The cache is an LRU under a size cap: every use of a copy marks it used (its directory's mtime, which every
 * worker process sharing the directory sees), and after each new copy the least recently used others are
 * deleted until the copies fit in `maxBytes`. The copy just made or used is never deleted, however large.
 */
export class SnapshotCache {
  readonly dir: string;
  readonly maxBytes: number;
  private readonly openStore: (uri: string) => ObjectStore;
  /** One download per snapshot, however many servers ask for it at once. */
  private readonly downloads = new Map<string, Promise<string>>();

  constructor(options: SnapshotCacheOptions = {}) {
    this.dir = path.resolve(options.dir ?? (process.env.SELFPLAY_SNAPSHOT_CACHE || DEFAULT_CACHE_DIR));
    this.maxBytes = options.maxBytes ?? maxBytesFromEnv(process.env.SELFPLAY_SNAPSHOT_CACHE_MAX_GIB);
    this.openStore = options.openStore ?? openStore;
  }

  /** A local directory holding the complete snapshot. */
  async localPath(snapshot: SnapshotRef, signal?: AbortSignal): Promise<string> {
    const { uri } = snapshot;
    if (uri.startsWith('s3://')) {
      const target = this.targetOf(snapshot);
      let download = this.downloads.get(target);
      if (!download) {
        download = this.download(snapshot, target).finally(() => this.downloads.delete(target));
        this.downloads.set(target, download);
      }
      // The download is shared, so one caller's deadline stops its wait, not the download.
      return untilAborted(download, signal);
    }
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(uri) && !uri.startsWith('file:')) {
      throw nonRetryable(
        NON_RETRYABLE.invalidConfig,
        `snapshot ${uri}: unsupported URI scheme; expected s3://bucket/prefix, file:///abs/dir or a path`,
      );
    }
    const dir = uri.startsWith('file:') ? fileURLToPath(uri) : path.resolve(uri);
    if (!(await exists(path.join(dir, COMPLETE_MARKER)))) throw incomplete(snapshot);
    await checkDigest(snapshot, dir);
    return dir;
  }

  private targetOf(snapshot: SnapshotRef): string {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(snapshot.policy)) {
      throw nonRetryable(
        NON_RETRYABLE.invalidConfig,
        `policy name ${JSON.stringify(snapshot.policy)} is not usable as a directory name (letters, digits, . _ -)`,
      );
    }
    const key = snapshot.sha256 === undefined ? snapshot.uri : `${snapshot.uri}\n${snapshot.sha256}`;
    const keyHash = createHash('sha256').update(key).digest('hex').slice(0, 16);
    return path.join(this.dir, snapshot.policy, `v${snapshot.version}`, keyHash);
  }

  private async download(snapshot: SnapshotRef, target: string): Promise<string> {
    if (await exists(path.join(target, COMPLETE_MARKER))) return markUsed(target);
    let store: ObjectStore;
    try {
      store = this.openStore(snapshot.uri);
    } catch (err) {
      throw nonRetryable(NON_RETRYABLE.invalidConfig, `snapshot ${snapshot.uri}: ${String(err)}`);
    }
    const keys = await unavailableOnError(snapshot, 'list', () => store.list(''));
    if (!keys.includes(COMPLETE_MARKER)) throw incomplete(snapshot);
    const temp = `${target}.partial-${randomBytes(6).toString('hex')}`;
    try {
      await mkdir(temp, { recursive: true });
      const objects = keys.filter((k) => k !== COMPLETE_MARKER);
      await forEachLimited(objects, PARALLEL_DOWNLOADS, (key) => copyObject(snapshot, store, key, temp));
      // The marker goes last, as on the store, so no reader ever takes a partial copy for complete; it names
      // the weights of the objects before it (a publish deletes it first and writes it last).
      await copyObject(snapshot, store, COMPLETE_MARKER, temp);
      await checkDigest(snapshot, temp);
      await rename(temp, target);
    } catch (err) {
      await rm(temp, { recursive: true, force: true });
      // Another process on the shared filesystem may have renamed its copy into place first.
      if (await exists(path.join(target, COMPLETE_MARKER))) return markUsed(target);
      throw err;
    }
    await markUsed(target);
    await this.evict(target);
    return target;
  }

  /**
   * Deletes the least recently used complete copies, never `keep` nor one this process is copying, until
   * the copies fit in `maxBytes`. Another process may be deleting too: a copy already gone counts as gone.
   */
  private async evict(keep: string): Promise<void> {
    const copies = await this.copies();
    let total = copies.reduce((sum, c) => sum + c.bytes, 0);
    for (const copy of copies.sort((a, b) => a.usedAt - b.usedAt)) {
      if (total <= this.maxBytes) return;
      if (copy.dir === keep || this.downloads.has(copy.dir)) continue;
      await rm(copy.dir, { recursive: true, force: true });
      total -= copy.bytes;
      // `{policy}/v{N}/` and `{policy}/` go once empty; a copy being made keeps them.
      for (const parent of [path.dirname(copy.dir), path.dirname(path.dirname(copy.dir))]) {
        await rmdir(parent).catch(() => undefined);
      }
    }
  }

  /** Every complete copy, `{dir}/{policy}/v{N}/{hash}`, with its size and when it was last used. */
  private async copies(): Promise<Array<{ dir: string; bytes: number; usedAt: number }>> {
    const copies: Array<{ dir: string; bytes: number; usedAt: number }> = [];
    for (const policy of await subdirectories(this.dir)) {
      for (const version of await subdirectories(policy)) {
        for (const copy of await subdirectories(version)) {
          if (copy.includes('.partial-') || !(await exists(path.join(copy, COMPLETE_MARKER)))) continue;
          const info = await stat(copy).catch(() => undefined);
          if (info) copies.push({ dir: copy, bytes: await bytesUnder(copy), usedAt: info.mtimeMs });
        }
      }
    }
    return copies;
  }
}

function maxBytesFromEnv(value: string | undefined): number {
  if (value === undefined || value === '') return DEFAULT_MAX_GIB * GIB;
  const gb = Number(value);
  if (!(gb > 0)) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `SELFPLAY_SNAPSHOT_CACHE_MAX_GIB must be a positive number of GiB, got ${JSON.stringify(value)}`,
    );
  }
  return gb * GIB;
}

/** Marks a copy used now (its directory's mtime, the cache's LRU clock). */
async function markUsed(dir: string): Promise<string> {
  const now = new Date();
  await utimes(dir, now, now).catch(() => undefined);
  return dir;
}

async function subdirectories(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isDirectory()).map((e) => path.join(dir, e.name));
}

async function bytesUnder(dir: string): Promise<number> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  const sizes = await Promise.all(
    entries
      .filter((e) => e.isFile())
      .map((e) =>
        stat(path.join(e.parentPath, e.name)).then(
          (s) => s.size,
          () => 0,
        ),
      ),
  );
  return sizes.reduce((sum, size) => sum + size, 0);
}

async function copyObject(
  snapshot: SnapshotRef,
  store: ObjectStore,
  key: string,
  dir: string,
): Promise<void> {
  const body = await unavailableOnError(snapshot, `get ${key}`, () => store.getStream(key));
  if (body === undefined) {
    throw new SnapshotUnavailable(`snapshot ${snapshot.uri}: object ${key} disappeared while it was copied`);
  }
  const file = path.join(dir, ...key.split('/'));
  await mkdir(path.dirname(file), { recursive: true });
  await unavailableOnError(snapshot, `copy ${key}`, () =>
    pipeline(body, createWriteStream(file, { flush: true })),
  );
}

async function unavailableOnError<T>(
  snapshot: SnapshotRef,
  what: string,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw new SnapshotUnavailable(`snapshot ${snapshot.uri}: ${what} failed: ${String(err)}`, { cause: err });
  }
}

/**
 * Refuses a snapshot whose marker names other weights than `snapshot.sha256`: it was published again at its
 * URI (a step applied again) after the publish that named them, and serving it would serve other weights
 * under their name. A marker naming no digest (a snapshot from before digests) cannot be checked, and passes.
 */
async function checkDigest(snapshot: SnapshotRef, dir: string): Promise<void> {
  if (snapshot.sha256 === undefined) return;
  const held = markerDigest(await readFile(path.join(dir, COMPLETE_MARKER), 'utf8'));
  if (held === undefined || held === snapshot.sha256) return;
  throw nonRetryable(
    NON_RETRYABLE.contractViolation,
    `snapshot ${snapshot.uri} (policy ${snapshot.policy} v${snapshot.version}) holds weights ${held.slice(0, 12)}, ` +
      `not ${snapshot.sha256.slice(0, 12)}: it was published again with other weights after the publish that ` +
      'named them, so those weights are gone; roll the run back to an earlier commit (selfplay rollback RUN --to N)',
  );
}

/** The weights' digest a `COMPLETE` marker names (the kernel writes JSON with `sha256`), if it names one. */
function markerDigest(text: string): string | undefined {
  try {
    const sha256 = (JSON.parse(text) as { sha256?: unknown } | null)?.sha256;
    return typeof sha256 === 'string' ? sha256 : undefined;
  } catch {
    return undefined;
  }
}

function incomplete(snapshot: SnapshotRef): Error {
  return nonRetryable(
    NON_RETRYABLE.contractViolation,
    `snapshot ${snapshot.uri} (policy ${snapshot.policy} v${snapshot.version}) has no ${COMPLETE_MARKER} marker: ` +
      'its publish did not finish, or the URI is wrong; a partial snapshot is never loaded',
  );
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    void work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
