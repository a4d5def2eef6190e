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

/** The name of `version` of the owner's policy under `template`. */
export function fillModelName(template: string, owner: ModelOwner, version: number): string {
  return template
    .replaceAll('{run}', runFor(template, owner))
    .replaceAll('{policy}', owner.policy)
    .replaceAll('{version}', String(version));
}

/**
 * The version a served model `id` names when it is one of the owner's names under `template`, else
 * undefined: another run's or another policy's adapter, or a base model.
 */
export function versionNamed(template: string, owner: ModelOwner, id: string): number | undefined {
  const [before, after, ...more] = fillTemplateParts(template, owner);
  if (before === undefined || after === undefined || more.length > 0) return undefined;
  if (!id.startsWith(before) || !id.endsWith(after)) return undefined;
  const digits = id.slice(before.length, id.length - after.length);
  return /^\d+$/.test(digits) ? Number(digits) : undefined;
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
