import { NON_RETRYABLE, nonRetryable } from '../activities/lib/errors';
import { engineRoot } from '../activities/clients/weight-sync/http';
import { CREDENTIAL_ENV } from './credentials';

/**
 * Which credential may go to which server, as the worker's environment (never a run config) declares it.
 * Whoever can start a workflow writes the run config, so a URL there is untrusted: a credential goes only to
 * a URL under a prefix it is bound to, and the servers the worker attaches credentials to by itself (trainer
 * kernels, weight-sync servers) must lie under some binding's prefix (docs/security.md).
 *
 *   SELFPLAY_CREDENTIAL_BINDINGS   `NAME=PREFIX[,PREFIX…][;NAME=PREFIX…]`, e.g.
 *                                  `SELFPLAY_KERNEL_TOKEN=http://kernel-a:8000,http://kernel-b:8000;SELFPLAY_VLLM_API_KEY=http://vllm:8000`
 *
 * A NAME is a credential variable (`SELFPLAY_…_API_KEY` / `_TOKEN`); one that is unset on a worker still
 * allows its prefixes there and sends nothing. Besides the declared bindings the environment implies two:
 * SELFPLAY_KERNEL_TOKEN to SELFPLAY_TRAINER_URL, and SELFPLAY_INFERENCE_API_KEY to SELFPLAY_INFERENCE_URL's
 * server (the URL without `/v1`): the operator set both sides of each pair.
 */
export const BINDINGS_ENV = 'SELFPLAY_CREDENTIAL_BINDINGS';
export const KERNEL_TOKEN_ENV = 'SELFPLAY_KERNEL_TOKEN';
export const INFERENCE_KEY_ENV = 'SELFPLAY_INFERENCE_API_KEY';

export interface Binding {
  credential: string;
  /** An http(s) URL without credentials, query or fragment; URLs below it at a path-segment boundary match. */
  prefix: string;
}

/** The declared bindings and the two the environment implies; a malformed declaration throws, naming it. */
export function bindingsFromEnv(env: NodeJS.ProcessEnv): Binding[] {
  const implied: Binding[] = [
    ...(env.SELFPLAY_TRAINER_URL ? [{ credential: KERNEL_TOKEN_ENV, prefix: env.SELFPLAY_TRAINER_URL }] : []),
    ...(env.SELFPLAY_INFERENCE_URL
      ? [{ credential: INFERENCE_KEY_ENV, prefix: engineRoot(env.SELFPLAY_INFERENCE_URL) }]
      : []),
  ];
  return [...parseBindings(env[BINDINGS_ENV] ?? ''), ...implied].map((b) => ({
    ...b,
    prefix: prefixOf(b.prefix, b.credential),
  }));
}

export function parseBindings(text: string): Binding[] {
  return text
    .split(/[;\n]/)
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .flatMap((entry) => {
      const eq = entry.indexOf('=');
      const credential = entry.slice(0, eq).trim();
      if (eq < 0 || !CREDENTIAL_ENV.test(credential)) {
        throw new Error(
          `${BINDINGS_ENV}: "${entry}" is not NAME=PREFIX[,PREFIX…] with NAME a SELFPLAY_<NAME>_API_KEY or ` +
            `SELFPLAY_<NAME>_TOKEN variable, e.g. ${KERNEL_TOKEN_ENV}=http://kernel:8000`,
        );
      }
      const prefixes = entry
        .slice(eq + 1)
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== '');
      if (prefixes.length === 0) throw new Error(`${BINDINGS_ENV}: ${credential} is bound to no URL`);
      return prefixes.map((prefix) => ({ credential, prefix }));
    });
}

/** A prefix as bindings compare it: scheme, host, port and path without a trailing slash. */
function prefixOf(text: string, credential: string): string {
  const url = parsedUrl(text);
  if (!url || url.username || url.password || url.search || url.hash) {
    throw new Error(
      `${BINDINGS_ENV}: ${credential}'s prefix "${text}" is not an http(s) URL without credentials, query or fragment`,
    );
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

function parsedUrl(text: string): URL | undefined {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether `url` is `prefix` or below it: same scheme, host and port (compared parsed, so
 * `http://kernel:8000@evil/` is evil's and `http://kernel:80001` another port), and the path continues at a
 * `/`. A URL carrying credentials of its own matches nothing.
 */
export function isUnder(url: string, prefix: string): boolean {
  const parsed = parsedUrl(url);
  if (!parsed || parsed.username || parsed.password) return false;
  const base = new URL(prefix);
  if (parsed.origin !== base.origin) return false;
  const path = parsed.pathname;
  return base.pathname === '/' || path === base.pathname || path.startsWith(`${base.pathname}/`);
}

/** The bindings whose prefix covers `url`, longest prefix first. */
function covering(bindings: readonly Binding[], url: string): Binding[] {
  return bindings.filter((b) => isUnder(url, b.prefix)).sort((a, b) => b.prefix.length - a.prefix.length);
}

/** Why `url` may not be called, or undefined when a binding covers it (or it is the worker's own). */
export function unboundProblem(bindings: readonly Binding[], url: string, what: string): string | undefined {
  if (covering(bindings, url).length > 0) return undefined;
  return (
    `${what} ${url} is not among this worker's servers: it must be the worker's own SELFPLAY_TRAINER_URL or ` +
    `SELFPLAY_INFERENCE_URL, or lie under a prefix of ${BINDINGS_ENV} on the workers (docs/security.md)`
  );
}

/** `unboundProblem` as a non-retryable failure: for the servers a worker attaches credentials to by itself. */
export function requireBound(bindings: readonly Binding[], url: string, what: string): void {
  const problem = unboundProblem(bindings, url, what);
  if (problem) throw nonRetryable(NON_RETRYABLE.invalidConfig, problem);
}

/** Why `credential` may not go to `url`, or undefined when a prefix bound to it covers the URL. */
export function credentialProblem(
  bindings: readonly Binding[],
  credential: string,
  url: string,
  what: string,
): string | undefined {
  if (covering(bindings, url).some((b) => b.credential === credential)) return undefined;
  const own = bindings.filter((b) => b.credential === credential).map((b) => b.prefix);
  return (
    `${what} names its credential ${credential}, which this worker sends only to ` +
    `${own.length ? own.join(', ') : 'no server'}; ${url} is not under them: bind it in ${BINDINGS_ENV} on ` +
    'the workers (docs/security.md) if that server is meant to get it'
  );
}

/**
 * The credential the environment binds to `url` (the longest covering prefix's), undefined when none is bound
 * or set. Prefixes of equal length bound to different set values are a contradiction the operator must fix.
 */
export function boundCredential(
  bindings: readonly Binding[],
  credentials: Readonly<Record<string, string>>,
  url: string,
): string | undefined {
  const found = covering(bindings, url);
  const longest = found.filter((b) => b.prefix.length === found[0]?.prefix.length);
  const values = [...new Set(longest.map((b) => credentials[b.credential]).filter((v): v is string => !!v))];
  if (values.length > 1) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `${url} is bound to ${longest.map((b) => b.credential).join(' and ')} at ${found[0]?.prefix}, which differ: ` +
        `bind that server to one credential in ${BINDINGS_ENV}`,
    );
  }
  return values[0];
}
