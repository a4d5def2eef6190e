/**
 * The tag that says whose weights a server samples from: `{run}@{N}`, or `{N}` for weights no run claims.
 * A weight sync gives it to SGLang's loads (`weight_version`), the kernel's sampler reports it itself, and
 * both return it with every answer (`metadata.weight_version`), so a sampler can check each answer.
 */
export interface WeightTag {
  /** The run (or one of its rollback lineages, `{run}.r{n}`) that loaded the weights. */
  run?: string;
  version: number;
}

const TAG = /^(?:([A-Za-z0-9._-]+)@)?(\d+)$/;

/** `run` undefined: weights no run claims. */
export const formatWeightTag = (version: number, run: string | undefined): string =>
  run ? `${run}@${version}` : String(version);

/** The tag in `value`, or undefined for anything else (SGLang's "default", a missing field). */
export function parseWeightTag(value: unknown): WeightTag | undefined {
  const parsed = typeof value === 'string' ? TAG.exec(value) : null;
  if (!parsed) return undefined;
  return { ...(parsed[1] ? { run: parsed[1] } : {}), version: Number(parsed[2]) };
}
