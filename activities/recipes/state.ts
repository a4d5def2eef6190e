import type { z } from 'zod';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';

/**
 * A recipe's committed state, checked against its schema. It comes from storage, so a mismatch (most often a
 * run resumed from another recipe's run) fails non-retryably, naming what was expected.
 */
export function parseRecipeState<T>(schema: z.ZodType<T>, state: unknown, what: string): T {
  const parsed = schema.safeParse(state);
  if (!parsed.success) {
    throw nonRetryable(
      NON_RETRYABLE.invalidInput,
      `the committed recipe state is not ${what} (${parsed.error.issues[0]?.message ?? 'invalid'}); ` +
        'was the run resumed from a run of another recipe?',
    );
  }
  return parsed.data;
}
