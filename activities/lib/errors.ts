import { TemporalFailure } from '@temporalio/common';
import { NON_RETRYABLE, nonRetryable } from '../../contracts/errors';

export {
  isNonRetryable,
  NON_RETRYABLE,
  NON_RETRYABLE_TYPES,
  nonRetryable,
  type NonRetryableType,
} from '../../contracts/errors';

/**
 * A read that no retry can fix: the object does not exist, or its URI names nothing readable. Storage reads
 * of inputs the config names (a corpus, a seed file) throw it so their callers can tell a wrong config from
 * an outage (see `inputReadFailure`).
 */
export class PermanentReadError extends Error {
  override readonly name = 'PermanentReadError';
}

/** File-system codes that mean the path names nothing readable, whatever happens later. */
const MISSING_PATH_CODES = new Set(['ENOENT', 'ENOTDIR', 'EISDIR']);

/**
 * Whether a failed read of a config-named input is permanent: the object is missing (a missing key, path or
 * bucket), the URI is malformed, or the content is (not gzip, not JSON). Anything else (connection refused,
 * a reset, 5xx, a timeout) is an outage. The cause chain is followed: loaders wrap what they caught.
 */
export function isPermanentReadFailure(err: unknown): boolean {
  // Duck-typed, not `instanceof Error`: errors from Node's own modules may come from another realm.
  for (let e = err, depth = 0; typeof e === 'object' && e !== null && depth < 8; depth++) {
    const { name, code, cause } = e as { name?: unknown; code?: unknown; cause?: unknown };
    if (
      e instanceof PermanentReadError ||
      e instanceof CorruptObjectError ||
      name === 'SyntaxError' ||
      name === 'NoSuchBucket' ||
      MISSING_PATH_CODES.has(String(code)) ||
      String(code).startsWith('Z_')
    )
      return true;
    e = cause;
  }
  return false;
}

/**
 * The failure to throw when an input the config names (`field`, at `uri`) cannot be read: `InvalidConfig`
 * (non-retryable, naming the field) when the read can never succeed as configured, otherwise a plain Error
 * that Temporal retries until storage is back.
 */
export function inputReadFailure(field: string, uri: string, err: unknown): Error {
  const message = `${field} ${uri}: ${err instanceof Error ? err.message : String(err)}`;
  if (isPermanentReadFailure(err)) return nonRetryable(NON_RETRYABLE.invalidConfig, message);
  return new Error(`${message} (transient: retried)`, { cause: err });
}

/**
 * A stored object that does not decode: not gzip, truncated, not JSON. Objects are written whole (an S3 put, a
 * rename), so one that does not decode now never will: the codec (clients/storage/codec.ts) throws this, with
 * the object's URI in the message, and `classifyFailure` makes it `CorruptData`.
 */
export class CorruptObjectError extends Error {
  override readonly name = 'CorruptObjectError';
}

/**
 * What an operator does about full storage, the cause a run waiting on `StorageFull` shows (`selfplay status`).
 */
export const STORAGE_FULL_ADVICE =
  'storage full: free space or raise the retention, then `selfplay retry RUN`';

/** File-system codes of a full disk (ENOSPC) or a used-up quota (EDQUOT), from Node and from the kernel alike. */
const FULL_DISK_CODES = new Set(['ENOSPC', 'EDQUOT']);

/**
 * Whether `err` (anywhere in its cause chain) says storage is full: MinIO's `XMinioStorageFull` ("Storage backend
 * has reached its minimum free drive threshold", HTTP 507, what it answers a put once its drive is full), any S3
 * 507 Insufficient Storage, or a local write's ENOSPC / EDQUOT.
 */
export function isStorageFull(err: unknown): boolean {
  return (
    inChain(err, (e) => {
      const { code, $metadata } = e as { code?: unknown; $metadata?: { httpStatusCode?: unknown } };
      return (
        e.name === 'XMinioStorageFull' ||
        $metadata?.httpStatusCode === 507 ||
        FULL_DISK_CODES.has(String(code))
      );
    }) !== undefined
  );
}

/** RangeErrors that say memory ran short, which may pass: not a programming error. */
const OUT_OF_MEMORY = /allocation failed|out of memory/i;

/**
 * What an activity's failure becomes at its edge (a worker interceptor: activities/lib/failure-edge.ts): an
 * already classified failure, a cancellation or an outage as it is; a corrupt stored object anywhere in its
 * cause chain `CorruptData`; full storage `StorageFull`; a TypeError or RangeError the code raised itself (no
 * cause: fetch's "fetch failed" carries the network error as its cause, and stays transient)
 * `ProgrammingError`. All non-retryable, saying what to do: no retry can fix them, and retried they would hold
 * the run invisibly.
 *
 * Full storage is non-retryable, not retried with a bound: space does not come back by itself. Nothing in
 * the run frees any while it cannot commit (retention runs after a commit), so a retry, bounded or not, writes
 * into the same full disk and only delays the operator wait (by the stuck-activity limit, 30 minutes by
 * default) while `selfplay status` shows attempts instead of the cause. A disk that a neighbour filled for a
 * moment costs one `selfplay retry`.
 */
export function classifyFailure(err: unknown): unknown {
  if (typeof err !== 'object' || err === null || err instanceof TemporalFailure) return err;
  if (isStorageFull(err)) {
    return nonRetryable(
      NON_RETRYABLE.storageFull,
      `${STORAGE_FULL_ADVICE} (${String((err as Error).message)})`,
    );
  }
  if (inChain(err, (e) => e instanceof CorruptObjectError)) {
    return nonRetryable(
      NON_RETRYABLE.corruptData,
      `${String((err as Error).message)}: the stored object is corrupt, and a retry would read the same bytes; delete or ` +
        'restore it (an iteration recomputes a missing unit or shard), then: selfplay retry RUN',
    );
  }
  const bug = inChain(
    err,
    (e) =>
      (e.name === 'TypeError' || e.name === 'RangeError') &&
      e.cause === undefined &&
      !OUT_OF_MEMORY.test(String(e.message)),
  );
  if (bug) {
    const where = /\n\s+(at .*)/.exec(String(bug.stack))?.[1];
    return nonRetryable(
      NON_RETRYABLE.programmingError,
      `${String(bug.name)}: ${String(bug.message)}${where ? ` (${where})` : ''}: a programming error, or stored data ` +
        'of another shape than the code expects; a retry would fail the same way',
    );
  }
  return err;
}

/**
 * The first error of `err`'s cause chain (itself included) that `match` takes. Duck-typed, not `instanceof
 * Error`: errors from Node's own modules may come from another realm.
 */
function inChain(
  err: unknown,
  match: (e: { name?: unknown; message?: unknown; cause?: unknown; stack?: unknown }) => boolean,
): { name?: unknown; message?: unknown; stack?: unknown } | undefined {
  for (let e = err, depth = 0; typeof e === 'object' && e !== null && depth < 8; depth++) {
    const candidate = e as { name?: unknown; message?: unknown; cause?: unknown; stack?: unknown };
    if (match(candidate)) return candidate;
    e = candidate.cause;
  }
  return undefined;
}
