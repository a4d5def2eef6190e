import { ApplicationFailure } from '@temporalio/common';

/**
 * The deterministic failure types (version 1): an activity raises them non-retryably (`nonRetryable` below)
 * and every activity's retry policy lists them (workflows/activity-options.ts), so both sides share one list.
 */
export const NON_RETRYABLE = {
  invalidConfig: 'InvalidConfig',
  invalidInput: 'InvalidInput',
  unknownModel: 'UnknownModel',
  contractViolation: 'ContractViolation',
  versionConflict: 'VersionConflict',
  /** A stored object that does not decode (bad gzip, truncated, not JSON, an unreadable safetensors file). */
  corruptData: 'CorruptData',
  /** A TypeError or RangeError of the code on the data it was given: a bug, or stored data of another shape. */
  programmingError: 'ProgrammingError',
  /** Storage that is full: MinIO's `XMinioStorageFull` (507), ENOSPC or EDQUOT, the kernel's 507 `storage_full`. */
  storageFull: 'StorageFull',
} as const;

export type NonRetryableType = (typeof NON_RETRYABLE)[keyof typeof NON_RETRYABLE];

/** The non-retryable types, as activity retry policies list them. */
export const NON_RETRYABLE_TYPES: readonly NonRetryableType[] = Object.values(NON_RETRYABLE);

/**
 * An activity that has failed, without progress, for longer than `timeouts.stuckAfterMinutes`: raised
 * non-retryably (activities/lib/stuck.ts) so its iteration waits for the operator with the last failure.
 */
export const STUCK_ACTIVITY = 'StuckActivity';

/**
 * Every failure an activity raises is one of two classes.
 * - **Deterministic**: a retry would fail the same way, so it fails the stage at once, non-retryably, with a
 *   message a person can act on. Exactly these types: a bad run config (`InvalidConfig`), a bad batch or
 *   request (`InvalidInput`), a model the server does not know (`UnknownModel`), a server answering outside
 *   its contract (`ContractViolation`), a trainer at another version than the run committed (`VersionConflict`),
 *   a stored object that does not decode (`CorruptData`), a TypeError or RangeError of the code on its data
 *   (`ProgrammingError`), storage that is full (`StorageFull`). The last three are found by `classifyFailure` at
 *   the activity's edge.
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
