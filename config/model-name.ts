import { NON_RETRYABLE, nonRetryable } from '../contracts/errors';

/**
 * Model names with placeholders: `{run}`, `{policy}` and `{version}` in an endpoint's model name are filled in
 * with the run that samples, the policy that plays the role and the version being sampled. Samplers request
 * the filled name, and a vLLM weight sync loads each version's adapter under exactly that name, so
 * `"{run}/{policy}-v{version}"` gives every run its own adapters on a server several runs share.
 */

/** Whose model a name names: the run (its rollback lineages `{run}.r{n}` are the run) and the policy. */
export interface ModelOwner {
  /** The run id; undefined only for configs from before run-scoped names (`config.runId` unset). */
  run?: string;
  policy: string;
}

const PLACEHOLDER = /\{(run|policy|version)\}/;

export const hasPlaceholders = (template: string): boolean => PLACEHOLDER.test(template);

/** How many hex digits of the weights' digest names carry: plenty to tell two publishes of a version apart. */
const DIGEST_DIGITS = 12;

/** The weights' digest as names carry it: its first hex digits. */
export const digestPrefix = (sha256: string): string => sha256.slice(0, DIGEST_DIGITS);

/**
 * What `{version}` is filled with: the version, and when its snapshot names its weights' digest, the digest's
 * prefix after a dash (`3-9f86d081884c`). Weights published again at a version (a step applied again)
 * are then a new name: vLLM loads them as a new adapter and samplers ask for that one, never the old
 * weights under the old name. A snapshot from before digests (`sha256` undefined): the version alone.
 */
export const versionLabel = (version: number, sha256?: string): string =>
  sha256 === undefined ? String(version) : `${version}-${digestPrefix(sha256)}`;

/** A `versionLabel` as a regular expression's source: group 1 the version, group 2 the digest's prefix. */
export const VERSION_LABEL = `(\\d+)(?:-([0-9a-f]{${DIGEST_DIGITS}}))?`;

const LABEL = new RegExp(`^${VERSION_LABEL}$`);

/** The version a `versionLabel` names, or undefined when `label` is none. */
function versionOfLabel(label: string): number | undefined {
  const parsed = LABEL.exec(label);
  return parsed ? Number(parsed[1]) : undefined;
}

/** The name of `version` of the owner's policy under `template`, for the weights `sha256` when known. */
export function fillModelName(template: string, owner: ModelOwner, version: number, sha256?: string): string {
  return template
    .replaceAll('{run}', runFor(template, owner))
    .replaceAll('{policy}', owner.policy)
    .replaceAll('{version}', versionLabel(version, sha256));
}

/**
 * The version a served model `id` names when it is one of the owner's names under `template` (with a digest
 * or without), else undefined: another run's or another policy's adapter, or a base model.
 */
export function versionNamed(template: string, owner: ModelOwner, id: string): number | undefined {
  const [before, after, ...more] = fillTemplateParts(template, owner);
  if (before === undefined || after === undefined || more.length > 0) return undefined;
  if (!id.startsWith(before) || !id.endsWith(after)) return undefined;
  return versionOfLabel(id.slice(before.length, id.length - after.length));
}

/** The template split at its `{version}`, everything else filled in. */
function fillTemplateParts(template: string, owner: ModelOwner): string[] {
  return template
    .split('{version}')
    .map((part) => part.replaceAll('{run}', runFor(template, owner)).replaceAll('{policy}', owner.policy));
}

function runFor(template: string, owner: ModelOwner): string {
  if (owner.run !== undefined || !template.includes('{run}')) return owner.run ?? '';
  throw nonRetryable(
    NON_RETRYABLE.invalidConfig,
    `model name "${template}" names {run}, but the run config carries no runId to fill it with`,
  );
}
