import { randomBytes } from 'node:crypto';
import { createReadStream, type Dirent } from 'node:fs';
import type { Readable } from 'node:stream';
import { link, mkdir, open, readdir, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { assertRange, assertValidKey, assertValidPrefix } from './key-rules';
import type { ObjectStore, ObjectVersion } from './types';

/** In-flight writes live next to their target under this name, so rename() stays on one filesystem. */
const TEMP_NAME = /^\.put-[0-9a-f]{16}-/;

/**
 * The embedded default data plane: a directory with the same key layout as a bucket. Writes are atomic
 * (temp file + fsync + rename, or link for a create), so a crash mid-write leaves the old object or none, never a torn one.
 * Unlike S3, a directory cannot hold both `a` and `a/b`; the key layout never needs that.
 */
export class LocalStore implements ObjectStore {
  readonly root: string;
  private readonly dir: string;

  constructor(dir: string) {
    this.dir = path.resolve(dir);
    this.root = pathToFileURL(this.dir).href;
  }

  async get(key: string): Promise<Buffer | undefined> {
    try {
      return await readFile(this.pathOf(key));
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async getRange(key: string, start: number, end: number): Promise<Buffer | undefined> {
    assertRange(start, end);
    let file;
    try {
      file = await open(this.pathOf(key), 'r');
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
    try {
      const buffer = Buffer.alloc(end - start);
      let filled = 0;
      while (filled < buffer.length) {
        const { bytesRead } = await file.read(buffer, filled, buffer.length - filled, start + filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      return buffer.subarray(0, filled);
    } finally {
      await file.close();
    }
  }

  async put(key: string, body: Buffer | string): Promise<void> {
    await this.write(key, body, (temp, target) => rename(temp, target).then(() => true));
  }

  async create(key: string, body: Buffer | string): Promise<boolean> {
    // link() fails with EEXIST where rename() would replace: the create-only form of the same atomic write.
    return this.write(key, body, async (temp, target) => {
      try {
        await link(temp, target);
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
        throw err;
      } finally {
        await rm(temp, { force: true });
      }
    });
  }

  /** The body written and synced to a temp file beside the target, then moved there by `place`. */
  private async write(
    key: string,
    body: Buffer | string,
    place: (temp: string, target: string) => Promise<boolean>,
  ): Promise<boolean> {
    const target = this.pathOf(key);
    const dir = path.dirname(target);
    const temp = path.join(dir, `.put-${randomBytes(8).toString('hex')}-${path.basename(target)}`);
    let placed: boolean;
    try {
      await mkdir(dir, { recursive: true });
      const file = await open(temp, 'wx');
      try {
        await file.writeFile(body);
        await file.sync();
      } finally {
        await file.close();
      }
      placed = await place(temp, target);
    } catch (err) {
      await rm(temp, { force: true });
      throw new Error(`local store ${this.root}: cannot write ${JSON.stringify(key)}: ${String(err)}`, {
        cause: err,
      });
    }
    await syncDirectory(dir);
    return placed;
  }

  async getStream(key: string): Promise<Readable | undefined> {
    const file = this.pathOf(key);
    if (!(await this.exists(key))) return undefined;
    return createReadStream(file);
  }

  async stat(key: string): Promise<ObjectVersion | undefined> {
    try {
      const info = await stat(this.pathOf(key));
      return info.isFile() ? { size: info.size, tag: `mtime:${info.mtimeMs}` } : undefined;
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async exists(key: string): Promise<boolean> {
    try {
      return (await stat(this.pathOf(key))).isFile();
    } catch (err) {
      if (isMissing(err)) return false;
      throw err;
    }
  }

  async list(prefix: string): Promise<string[]> {
    assertValidPrefix(prefix);
    const slash = prefix.lastIndexOf('/');
    const base = slash < 0 ? '' : prefix.slice(0, slash);
    const keys: string[] = [];
    await this.walk(base, prefix, keys);
    return keys.sort();
  }

  async delete(key: string): Promise<void> {
    try {
      await unlink(this.pathOf(key));
    } catch (err) {
      if (!isMissing(err)) throw err;
    }
  }

  uri(key: string): string {
    return pathToFileURL(this.pathOf(key)).href;
  }

  /** Collects files under `dirKey` whose key starts with `prefix`, descending only into dirs that can match. */
  private async walk(dirKey: string, prefix: string, out: string[]): Promise<void> {
    let entries: Dirent[];
    try {
      entries = await readdir(dirKey === '' ? this.dir : path.join(this.dir, ...dirKey.split('/')), {
        withFileTypes: true,
      });
    } catch (err) {
      if (isMissing(err)) return;
      throw err;
    }
    for (const entry of entries) {
      const key = dirKey === '' ? entry.name : `${dirKey}/${entry.name}`;
      if (entry.isDirectory()) {
        const asDir = `${key}/`;
        if (asDir.startsWith(prefix) || prefix.startsWith(asDir)) await this.walk(key, prefix, out);
      } else if (entry.isFile() && !TEMP_NAME.test(entry.name) && key.startsWith(prefix)) {
        out.push(key);
      }
    }
  }

  private pathOf(key: string): string {
    assertValidKey(key);
    if (key.split('/').some((s) => TEMP_NAME.test(s))) {
      throw new Error(`storage key ${JSON.stringify(key)} uses the local store's temp-file naming '.put-…'`);
    }
    return path.join(this.dir, ...key.split('/'));
  }
}

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR';
}

/** Makes the rename itself durable: without it a power loss can forget the new directory entry. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
