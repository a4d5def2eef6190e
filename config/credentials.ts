import { z } from 'zod';
import { NON_RETRYABLE, nonRetryable } from '../contracts/errors';

/**
 * Per-endpoint credentials. A run config never holds a secret; an endpoint that needs one names the worker
 * environment variable holding it (`apiKeyEnv`), and only that endpoint's URL ever receives it. The names
 * allowed are `SELFPLAY_…_API_KEY` and `SELFPLAY_…_TOKEN`, so a config cannot have a worker send its S3 keys,
 * codec keys or anything else in its environment to a URL the config chose.
 */
export const CREDENTIAL_ENV = /^SELFPLAY_[A-Z0-9_]*_(API_KEY|TOKEN)$/;

/** What an OpenAI-compatible client sends when the endpoint needs no key (vLLM without --api-key ignores it). */
export const NO_API_KEY = 'EMPTY';

export const apiKeyEnv = z
  .string()
  .regex(
    CREDENTIAL_ENV,
    'an environment variable named SELFPLAY_<NAME>_API_KEY or SELFPLAY_<NAME>_TOKEN (e.g. SELFPLAY_KERNEL_TOKEN); ' +
      'only such variables may be sent to a server a run config names',
  );

/** The message of the schema check that `apiKeyEnv` comes with a `baseUrl` in the same entry. */
export const CREDENTIAL_NEEDS_URL =
  'apiKeyEnv needs baseUrl in the same entry: a credential is sent only to the server named beside it';

/** The credential variables of a worker's environment (nothing else can ever be looked up by name). */
export function credentialsFromEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(
      (entry): entry is [string, string] => CREDENTIAL_ENV.test(entry[0]) && !!entry[1],
    ),
  );
}

/** The key for the endpoint `what`: the variable `name` names, `NO_API_KEY` without a name. */
export function apiKeyFrom(
  credentials: Readonly<Record<string, string>>,
  name: string | undefined,
  what: string,
): string {
  if (name === undefined) return NO_API_KEY;
  const key = credentials[name];
  if (!key) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `${what} names its credential ${name}, which is not set on this worker: set ${name} in the worker's environment`,
    );
  }
  return key;
}
