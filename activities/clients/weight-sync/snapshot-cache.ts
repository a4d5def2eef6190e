import { createHash, randomBytes } from 'node:crypto';
import { access, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NON_RETRYABLE, nonRetryable } from '../../lib/errors';
import { openStore, type ObjectStore } from '../storage';
import type { SnapshotRef } from './types';
import { forEachLimited } from '../../lib/concurrency';
import { COMPLETE_MARKER } from '../trainer-contract';

const DEFAULT_CACHE_DIR = '.selfplay/snapshots';
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
  /** Opens the store rooted at an `s3://` snapshot's prefix (tests pass a LocalStore). */
  openStore?: (uri: string) => ObjectStore;
}

/**
 * vLLM and SGLang load from a path on their own host, so a snapshot published to S3 is copied once into a
 * cache on the shared filesystem: `{dir}/{policy}/v{N}/{hash of the URI}/`. The URI hash keeps two runs
 * that share a policy name (and so version numbers) from ever reading each other's weights. The copy is
 * made in a temp directory and renamed into place, so a directory at that path is always complete.
 */
export class SnapshotCache {
  readonly dir: string;
  private readonly openStore: (uri: string) => ObjectStore;
  /** One download per snapshot, however many servers ask for it at once. */
  private readonly downloads = new Map<string, Promise<string>>();

  constructor(options: SnapshotCacheOptions = {}) {
    this.dir = path.resolve(options.dir ?? (process.env.SELFPLAY_SNAPSHOT_CACHE || DEFAULT_CACHE_DIR));
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
    return dir;
  }

  private targetOf(snapshot: SnapshotRef): string {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(snapshot.policy)) {
      throw nonRetryable(
        NON_RETRYABLE.invalidConfig,
        `policy name ${JSON.stringify(snapshot.policy)} is not usable as a directory name (letters, digits, . _ -)`,
      );
    }
    const uriHash = createHash('sha256').update(snapshot.uri).digest('hex').slice(0, 16);
    return path.join(this.dir, snapshot.policy, `v${snapshot.version}`, uriHash);
  }

  private async download(snapshot: SnapshotRef, target: string): Promise<string> {
    if (await exists(path.join(target, COMPLETE_MARKER))) return target;
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
      // The marker goes last, as on the store, so no reader ever takes a partial copy for complete.
      await copyObject(snapshot, store, COMPLETE_MARKER, temp);
      await rename(temp, target);
      return target;
    } catch (err) {
      await rm(temp, { recursive: true, force: true });
      // Another process on the shared filesystem may have renamed its copy into place first.
      if (await exists(path.join(target, COMPLETE_MARKER))) return target;
      throw err;
    }
  }
}

async function copyObject(
  snapshot: SnapshotRef,
  store: ObjectStore,
  key: string,
  dir: string,
): Promise<void> {
  const body = await unavailableOnError(snapshot, `get ${key}`, () => store.get(key));
  if (body === undefined) {
    throw new SnapshotUnavailable(`snapshot ${snapshot.uri}: object ${key} disappeared while it was copied`);
  }
  const file = path.join(dir, ...key.split('/'));
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, body, { flush: true });
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
