/**
 * The deterministic failure types (version 1): an activity raises them non-retryably (activities/lib/errors.ts)
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
} as const;

export type NonRetryableType = (typeof NON_RETRYABLE)[keyof typeof NON_RETRYABLE];

/** The non-retryable types, as activity retry policies list them. */
export const NON_RETRYABLE_TYPES: readonly NonRetryableType[] = Object.values(NON_RETRYABLE);

/**
 * An activity that has failed, without progress, for longer than `timeouts.stuckAfterMinutes`: raised
 * non-retryably (activities/lib/stuck.ts) so its iteration waits for the operator with the last failure.
 */
export const STUCK_ACTIVITY = 'StuckActivity';
