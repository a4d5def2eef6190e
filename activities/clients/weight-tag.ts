import { versionLabel, VERSION_LABEL } from '../../config/model-name';

/**
 * The tag that says whose weights a server samples from: `{run}@{N}`, or `{N}` for weights no run claims, with
 * the weights' digest prefix after the version when the snapshot names one (`{run}@{N}-{digest}`, see
 * `versionLabel`). A weight sync gives it to SGLang's loads (`weight_version`), the kernel's sampler reports it
 * itself, and both return it with every answer (`metadata.weight_version`), so a sampler can check each answer.
 */
export interface WeightTag {
  /** The run (or one of its rollback lineages, `{run}.r{n}`) that loaded the weights. */
  run?: string;
  version: number;
  /** The weights' digest prefix (`digestPrefix`); absent: a tag from before digests, or the kernel's own. */
  digest?: string;
}

const TAG = new RegExp(`^(?:([A-Za-z0-9._-]+)@)?${VERSION_LABEL}$`);

/** `run` undefined: weights no run claims; `sha256` undefined: a snapshot from before digests. */
export const formatWeightTag = (version: number, run: string | undefined, sha256?: string): string => {
  const label = versionLabel(version, sha256);
  return run ? `${run}@${label}` : label;
};

/** The tag in `value`, or undefined for anything else (SGLang's "default", a missing field). */
export function parseWeightTag(value: unknown): WeightTag | undefined {
  const parsed = typeof value === 'string' ? TAG.exec(value) : null;
  if (!parsed) return undefined;
  return {
    ...(parsed[1] ? { run: parsed[1] } : {}),
    version: Number(parsed[2]),
    ...(parsed[3] ? { digest: parsed[3] } : {}),
  };
}
