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
} as const;

export type NonRetryableType = (typeof NON_RETRYABLE)[keyof typeof NON_RETRYABLE];

/** The non-retryable types, as activity retry policies list them. */
export const NON_RETRYABLE_TYPES: readonly NonRetryableType[] = Object.values(NON_RETRYABLE);
