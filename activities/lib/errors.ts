import { ApplicationFailure } from '@temporalio/common';
import { NON_RETRYABLE, NON_RETRYABLE_TYPES, type NonRetryableType } from '../../contracts/errors';

export { NON_RETRYABLE, NON_RETRYABLE_TYPES, type NonRetryableType };

/**
 * Every failure an activity raises is one of two classes.
 * - **Deterministic**: a retry would fail the same way, so it fails the stage at once, non-retryably, with a
 *   message a person can act on. Exactly these types: a bad run config (`InvalidConfig`), a bad batch or
 *   request (`InvalidInput`), a model the server does not know (`UnknownModel`), a server answering outside
 *   its contract (`ContractViolation`), a trainer at another version than the run committed (`VersionConflict`).
 * - **Transient**: everything else (storage or network down, 5xx, timeouts, a kernel restarting). It is
 *   thrown as a plain Error and retried by Temporal with capped backoff and, by default, no attempt limit
 *   (workflows/activity-options.ts), so an outage of any length delays a run but never fails it.
 */
export function nonRetryable(type: NonRetryableType, message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, type);
}

/** Whether `err` is a deterministic failure (above): no retry can fix it. */
export function isNonRetryable(err: unknown): boolean {
  return (
    err instanceof ApplicationFailure &&
    (err.nonRetryable || (NON_RETRYABLE_TYPES as readonly string[]).includes(err.type ?? ''))
  );
}

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
