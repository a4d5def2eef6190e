import { realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunConfig } from './schema';

/**
 * Where a run config may have workers read from. Whoever can start a workflow writes the config, and a worker
 * reads what its inputs name and puts parsed lines and error snippets into the run's artifacts, so an input
 * outside these roots (`/proc/self/environ`, another tenant's bucket) is refused before it is read. Checked
 * like the kernel's storage roots (infra/kernels/selfplay_kernel/access.py): directories with symlinks and
 * `..` resolved, S3 prefixes compared segment by segment (`s3://b/data` does not admit `s3://b/data2`).
 *
 *   SELFPLAY_INPUT_ROOTS   comma-separated directories and s3://bucket/prefix roots; default `test/fixtures`
 *
 * The run storage (SELFPLAY_STORAGE) is always a root: the workers read and write it anyway, and continual
 * training's exclusion lists and `selfplay index build --out` live there. The default adds only the samples
 * shipped with the project, which the recipes' presets name (relative to the working directory, as those
 * paths are), so `{"recipe":"spice"}` and the tests run unconfigured while nothing else on the machine is
 * readable; a deployment names its data (compose: its bucket).
 */
export const INPUT_ROOTS_ENV = 'SELFPLAY_INPUT_ROOTS';
export const DEFAULT_INPUT_ROOTS = 'test/fixtures';

type Root = { bucket: string; key: string[] } | { dir: string };

export interface InputRoots {
  /** The roots as configured, for messages. */
  listed: readonly string[];
  roots: readonly Root[];
}

export function inputRootsFromEnv(env: NodeJS.ProcessEnv, storageUri: string): InputRoots {
  const configured = (env[INPUT_ROOTS_ENV] ?? DEFAULT_INPUT_ROOTS)
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r !== '');
  const listed = [storageUri, ...configured];
  return {
    listed,
    roots: listed.map((uri) => {
      const root = located(uri);
      if (typeof root === 'string') throw new Error(`${INPUT_ROOTS_ENV}: root ${uri} ${root}`);
      return root;
    }),
  };
}

/** Why the input `uri` of config field `field` may not be read, or undefined when it lies under a root. */
export function inputProblem(roots: InputRoots, uri: string, field: string): string | undefined {
  const loc = located(uri);
  if (typeof loc === 'string') return `${field}: ${uri} ${loc}`;
  if (roots.roots.some((root) => within(loc, root))) return undefined;
  return (
    `${field}: ${uri} is outside the input roots of this worker (${roots.listed.join(', ')}); ` +
    `put the file under one of them or add its directory or s3:// prefix to ${INPUT_ROOTS_ENV} on the workers`
  );
}

/**
 * Every input the run's recipe reads from a location its config names, by field. A recipe that starts reading
 * another such field must be listed here; the corpus is checked again where it is read (activities/stages/plan.ts).
 */
export function configInputs(config: RunConfig): Array<{ field: string; uri: string }> {
  const { recipe, corpus, retrieval } = config;
  // An iteration's config leaves out an `evaluation` that names no benchmark (iterationConfig, workflows/run-params.ts).
  const benchmarks = (config.evaluation as RunConfig['evaluation'] | undefined)?.benchmarks ?? [];
  const inputs: Array<{ field: string; uri: string | undefined }> = [
    ...(READS_CORPUS[recipe]
      ? [
          { field: 'corpus.uri', uri: corpus.uri },
          { field: 'corpus.excludeDocIds', uri: corpus.excludeDocIds },
        ]
      : []),
    ...(recipe === 'mae' ? [{ field: 'mae.seedQuestions', uri: config.mae.seedQuestions }] : []),
    ...(recipe === 'ssp' ? [{ field: 'ssp.answers', uri: config.ssp.answers }] : []),
    ...(recipe === 'ssp' || recipe === 'scope' ? [{ field: 'retrieval.index', uri: retrieval.index }] : []),
    ...benchmarks.map((b, i) => ({ field: `evaluation.benchmarks.${i}.uri`, uri: b.uri })),
  ];
  return inputs.filter((i): i is { field: string; uri: string } => i.uri !== undefined);
}

/** The recipes that plan from the corpus (MAE grows its own question pool; SSP plans from its answers). */
const READS_CORPUS: Readonly<Record<RunConfig['recipe'], boolean>> = {
  spice: true,
  spell: true,
  scope: true,
  mae: false,
  ssp: false,
};

/** What every input of `config` that lies outside the roots is refused with. */
export function inputProblems(roots: InputRoots, config: RunConfig): string[] {
  return configInputs(config)
    .map(({ field, uri }) => inputProblem(roots, uri, field))
    .filter((p): p is string => p !== undefined);
}

/** A URI as roots compare it, or why it names nothing a root can hold. */
function located(uri: string): Root | string {
  if (uri.startsWith('s3://')) {
    const [bucket = '', ...key] = uri.slice('s3://'.length).split('/');
    if (bucket === '') return 'names no bucket (expected s3://bucket/key)';
    if (key.some((s) => s === '.' || s === '..')) return 'has a "." or ".." segment';
    return { bucket, key: key.filter((s) => s !== '') };
  }
  if (/^[a-z][a-z0-9+.-]*:/i.test(uri) && !uri.startsWith('file:')) {
    return 'is neither a path, file:// nor s3://';
  }
  return { dir: realPath(path.resolve(uri.startsWith('file:') ? fileURLToPath(uri) : uri)) };
}

/** The path with every symlink resolved, as far as it exists (the rest appended as written). */
function realPath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    const parent = path.dirname(p);
    return parent === p ? p : path.join(realPath(parent), path.basename(p));
  }
}

function within(loc: Root, root: Root): boolean {
  if ('dir' in root) {
    if (!('dir' in loc)) return false;
    const rel = path.relative(root.dir, loc.dir);
    return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
  }
  if ('dir' in loc || loc.bucket !== root.bucket) return false;
  return root.key.every((segment, i) => loc.key[i] === segment);
}
