import { ApplicationFailure } from '@temporalio/common';

/**
 * Error classes every activity uses. Non-retryable failures carry a message a person can act on; anything
 * else (timeouts, 5xx, connection resets) is thrown as a plain Error and retried by Temporal.
 */
export const NON_RETRYABLE = {
  invalidConfig: 'InvalidConfig',
  invalidInput: 'InvalidInput',
  unknownModel: 'UnknownModel',
  contractViolation: 'ContractViolation',
  versionConflict: 'VersionConflict',
} as const;

export type NonRetryableType = (typeof NON_RETRYABLE)[keyof typeof NON_RETRYABLE];

export function nonRetryable(type: NonRetryableType, message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, type);
}
