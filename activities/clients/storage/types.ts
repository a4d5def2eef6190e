import type { Readable } from 'node:stream';

/** What identifies one version of an object: its size and a tag that changes when it is rewritten. */
export interface ObjectVersion {
  size: number;
  /** The ETag on S3, the modification time of a local file. */
  tag: string;
}

/**
 * The data plane's one interface. Two implementations share the key layout of `storage/keys.ts`:
 * S3 (any S3-compatible server) and a local directory (the embedded default).
 */
export interface ObjectStore {
  /** URI of the store's root, e.g. `s3://bucket/prefix` or `file:///abs/dir`. */
  readonly root: string;
  /** The object's bytes, or undefined when no object has that key. */
  get(key: string): Promise<Buffer | undefined>;
  /**
   * Bytes `start` to `end` (exclusive) of the object, fewer where it ends first; undefined when no object has
   * that key. A segment of a stored corpus is read this way, without the rest of its chunk.
   */
  getRange(key: string, start: number, end: number): Promise<Buffer | undefined>;
  /** Writes the whole object atomically: readers see the old object or the new one, never a part. */
  put(key: string, body: Buffer | string): Promise<void>;
  /**
   * Writes the object only when no object has the key, atomically (of two concurrent creates, one wins);
   * false, writing nothing, when one has. Outputs that readers may already have used are written this way, so
   * an attempt that outlived its retry (a worker cut off from Temporal by an outage, still running) cannot
   * replace them.
   */
  create(key: string, body: Buffer | string): Promise<boolean>;
  /** The object's bytes as a stream, for objects too large to hold (a corpus); undefined when missing. */
  getStream(key: string): Promise<Readable | undefined>;
  /** The object's size and version tag; undefined when missing. */
  stat(key: string): Promise<ObjectVersion | undefined>;
  exists(key: string): Promise<boolean>;
  /** Keys under a prefix, sorted, recursively. */
  list(prefix: string): Promise<string[]>;
  delete(key: string): Promise<void>;
  /** A URI another service (the trainer) can read the object from. */
  uri(key: string): string;
}
