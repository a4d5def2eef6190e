/**
 * The data plane's one interface. Two implementations share the key layout of `storage/keys.ts`:
 * S3 (any S3-compatible server) and a local directory (the embedded default).
 */
export interface ObjectStore {
  /** URI of the store's root, e.g. `s3://bucket/prefix` or `file:///abs/dir`. */
  readonly root: string;
  /** The object's bytes, or undefined when no object has that key. */
  get(key: string): Promise<Buffer | undefined>;
  /** Writes the whole object atomically: readers see the old object or the new one, never a part. */
  put(key: string, body: Buffer | string): Promise<void>;
  exists(key: string): Promise<boolean>;
  /** Keys under a prefix, sorted, recursively. */
  list(prefix: string): Promise<string[]>;
  delete(key: string): Promise<void>;
  /** A URI another service (the trainer) can read the object from. */
  uri(key: string): string;
}
