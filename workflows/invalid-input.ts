import { ApplicationFailure } from '@temporalio/workflow';

/** A workflow's input refused at once, non-retryably, naming every problem by its field path. */
export function invalidInput(workflow: string, problems: string[]): ApplicationFailure {
  return ApplicationFailure.create({
    type: 'InvalidInput',
    nonRetryable: true,
    message: `invalid ${workflow} input:\n- ${problems.join('\n- ')}`,
    details: [problems],
  });
}
