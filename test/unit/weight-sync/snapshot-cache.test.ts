import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { LocalStore } from '../../../activities/clients/storage';
import {
  SnapshotCache,
  SnapshotUnavailable,
  type SnapshotRef,
} from '../../../activities/clients/weight-sync';
import { DIGEST, FULL_FILES, s3InDirectory, tempDir, writeSnapshot } from './fixtures';

let dir: string;
let cacheDir: string;
let s3Root: string;
let cache: SnapshotCache;

beforeEach(async () => {
  dir = await tempDir('snapshot-cache-');
  cacheDir = path.join(dir, 'cache');
  s3Root = path.join(dir, 's3');
  cache = new SnapshotCache({ dir: cacheDir, openStore: s3InDirectory(s3Root) });
});
afterEach(async () => {
  jest.restoreAllMocks();
  await rm(dir, { recursive: true, force: true });
});

async function s3Snapshot(
  prefix: string,
  options?: { complete?: boolean; sha256?: string },
  files = FULL_FILES,
): Promise<SnapshotRef> {
  await writeSnapshot(path.join(s3Root, 'bucket', prefix), files, options);
  const sha256 = options?.sha256;
  return {
    policy: 'solver',
    version: 7,
    uri: `s3://bucket/${prefix}`,
    format: 'full',
    ...(sha256 ? { sha256 } : {}),
  };
}

/** Every file under a directory, relative, sorted. */
async function filesUnder(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
    .sort();
}

test('copies every object of an s3 snapshot, nested keys included, once, streamed to its file', async () => {
  const snapshot = await s3Snapshot('runs/r1/solver/v7');
  const wholeReads = jest.spyOn(LocalStore.prototype, 'get');
  const gets = jest.spyOn(LocalStore.prototype, 'getStream');
  const local = await cache.localPath(snapshot);
  expect(path.relative(cacheDir, local)).toMatch(/^solver\/v7\/[0-9a-f]{16}$/);
  expect(await filesUnder(local)).toEqual(['COMPLETE', ...Object.keys(FULL_FILES)].sort());
  expect(await readFile(path.join(local, 'tokenizer', 'tokenizer.json'), 'utf8')).toBe(
    FULL_FILES['tokenizer/tokenizer.json'],
  );
  expect(gets).toHaveBeenCalledTimes(5);
  expect(wholeReads).not.toHaveBeenCalled();

  expect(await cache.localPath(snapshot)).toBe(local);
  // A second cache on the same directory (another worker process) finds the copy complete too.
  expect(
    await new SnapshotCache({ dir: cacheDir, openStore: s3InDirectory(s3Root) }).localPath(snapshot),
  ).toBe(local);
  expect(gets).toHaveBeenCalledTimes(5);
});

test('concurrent requests for one snapshot share one download', async () => {
  const snapshot = await s3Snapshot('solver/v7');
  const gets = jest.spyOn(LocalStore.prototype, 'getStream');
  const paths = await Promise.all([
    cache.localPath(snapshot),
    cache.localPath(snapshot),
    cache.localPath(snapshot),
  ]);
  expect(new Set(paths).size).toBe(1);
  expect(gets).toHaveBeenCalledTimes(5);
});

test('two snapshots with the same policy and version but different URIs never share a copy', async () => {
  const a = await s3Snapshot('run-a/solver/v7');
  const b = await s3Snapshot('run-b/solver/v7');
  const [pathA, pathB] = [await cache.localPath(a), await cache.localPath(b)];
  expect(pathA).not.toBe(pathB);
  expect(path.dirname(pathA)).toBe(path.dirname(pathB));
});

test('weights published again at the same URI and version are copied anew, never served from the old copy', async () => {
  const prefix = 'runs/r1/solver/v7';
  const first = await s3Snapshot(prefix, { sha256: DIGEST.first });
  const firstCopy = await cache.localPath(first);
  // A step applied again after a failed commit publishes other weights at the same URI.
  const shard = 'model-00001-of-00002.safetensors';
  const again = await s3Snapshot(
    prefix,
    { sha256: DIGEST.again },
    { ...FULL_FILES, [shard]: 'stepped again' },
  );
  const againCopy = await cache.localPath(again);
  expect(againCopy).not.toBe(firstCopy);
  expect(await readFile(path.join(againCopy, shard), 'utf8')).toBe('stepped again');
  expect(await readFile(path.join(firstCopy, shard), 'utf8')).toBe(FULL_FILES[shard]);

  // The first weights are gone from the store: a cache without their copy refuses them, naming both digests.
  const elsewhere = new SnapshotCache({ dir: path.join(dir, 'other'), openStore: s3InDirectory(s3Root) });
  await expect(elsewhere.localPath(first)).rejects.toMatchObject({
    type: 'ContractViolation',
    nonRetryable: true,
    message: expect.stringContaining(
      `holds weights ${'b'.repeat(12)}, not ${'a'.repeat(12)}: it was published again with other weights`,
    ) as unknown,
  });
  expect(await filesUnder(path.join(dir, 'other'))).toEqual([]);
  // A local snapshot is checked the same way; a snapshot from before digests is taken as it is.
  const local = await writeSnapshot(path.join(dir, 'published', 'v7'), FULL_FILES, { sha256: DIGEST.again });
  const ref: SnapshotRef = { policy: 'solver', version: 7, uri: local, format: 'full' };
  expect(await cache.localPath({ ...ref, sha256: DIGEST.again })).toBe(local);
  await expect(cache.localPath({ ...ref, sha256: DIGEST.first })).rejects.toMatchObject({
    type: 'ContractViolation',
  });
  expect(await cache.localPath(ref)).toBe(local);
});

test('an s3 snapshot without COMPLETE is refused and leaves nothing in the cache', async () => {
  const snapshot = await s3Snapshot('solver/v7', { complete: false });
  await expect(cache.localPath(snapshot)).rejects.toMatchObject({
    type: 'ContractViolation',
    nonRetryable: true,
  });
  await mkdir(cacheDir, { recursive: true });
  expect(await filesUnder(cacheDir)).toEqual([]);
});

test('a store failing mid-copy is SnapshotUnavailable and the partial copy is removed', async () => {
  const snapshot = await s3Snapshot('solver/v7');
  jest.spyOn(LocalStore.prototype, 'getStream').mockRejectedValueOnce(new Error('connection reset'));
  await expect(cache.localPath(snapshot)).rejects.toThrow(SnapshotUnavailable);
  expect(await filesUnder(cacheDir)).toEqual([]);
  // The next sync tries again and succeeds.
  expect(await filesUnder(await cache.localPath(snapshot))).toContain('COMPLETE');
});

test('file:// and plain-path snapshots are used in place, and need their COMPLETE marker', async () => {
  const published = await writeSnapshot(path.join(dir, 'published', 'v7'), FULL_FILES);
  const ref = (uri: string): SnapshotRef => ({ policy: 'solver', version: 7, uri, format: 'full' });
  expect(await cache.localPath(ref(pathToFileURL(published).href))).toBe(published);
  expect(await cache.localPath(ref(published))).toBe(published);

  const partial = await writeSnapshot(path.join(dir, 'published', 'v8'), FULL_FILES, { complete: false });
  await expect(cache.localPath(ref(pathToFileURL(partial).href))).rejects.toMatchObject({
    type: 'ContractViolation',
  });
  await expect(cache.localPath(ref('gs://bucket/solver/v7'))).rejects.toMatchObject({
    type: 'InvalidConfig',
  });
});

describe('the size cap', () => {
  /** Snapshot `name` of its own policy, copied; the bytes one copy takes. */
  const copy = async (name: string, c: SnapshotCache = cache): Promise<string> =>
    c.localPath({ ...(await s3Snapshot(`runs/r1/${name}`)), policy: name });
  const copyBytes = Object.values({ ...FULL_FILES, COMPLETE: 'v1' }).join('').length;
  /** The policies with a copy in the cache. */
  const cached = async (): Promise<string[]> => (await readdir(cacheDir)).sort();
  const tick = () => new Promise((resolve) => setTimeout(resolve, 20));

  test('past maxBytes, the least recently used copies are deleted after each new copy', async () => {
    const capped = new SnapshotCache({
      dir: cacheDir,
      openStore: s3InDirectory(s3Root),
      maxBytes: 2.5 * copyBytes,
    });
    await copy('a', capped);
    await tick();
    await copy('b', capped);
    await tick();
    // Using a again makes b the least recently used.
    await copy('a', capped);
    await tick();
    await copy('c', capped);
    expect(await cached()).toEqual(['a', 'c']);
    await tick();
    await copy('d', capped);
    expect(await cached()).toEqual(['c', 'd']);
  });

  test('the copy just made stays even when it alone is over the cap', async () => {
    const tiny = new SnapshotCache({ dir: cacheDir, openStore: s3InDirectory(s3Root), maxBytes: 1 });
    await copy('a', tiny);
    await tick();
    const b = await copy('b', tiny);
    expect(await cached()).toEqual(['b']);
    expect(await filesUnder(b)).toContain('COMPLETE');
  });

  test('the cap comes from SELFPLAY_SNAPSHOT_CACHE_MAX_GIB (GiB, 50 by default); a bad value is a config error', () => {
    const withEnv = (value: string | undefined): SnapshotCache => {
      const saved = process.env.SELFPLAY_SNAPSHOT_CACHE_MAX_GIB;
      if (value === undefined) delete process.env.SELFPLAY_SNAPSHOT_CACHE_MAX_GIB;
      else process.env.SELFPLAY_SNAPSHOT_CACHE_MAX_GIB = value;
      try {
        return new SnapshotCache({ dir: cacheDir });
      } finally {
        if (saved === undefined) delete process.env.SELFPLAY_SNAPSHOT_CACHE_MAX_GIB;
        else process.env.SELFPLAY_SNAPSHOT_CACHE_MAX_GIB = saved;
      }
    };
    expect(withEnv(undefined).maxBytes).toBe(50 * 1024 ** 3);
    expect(withEnv('0.5').maxBytes).toBe(512 * 1024 ** 2);
    let refused: unknown;
    try {
      withEnv('lots');
    } catch (err) {
      refused = err;
    }
    expect(refused).toMatchObject({
      type: 'InvalidConfig',
      message: 'SELFPLAY_SNAPSHOT_CACHE_MAX_GIB must be a positive number of GiB, got "lots"',
    });
  });
});
