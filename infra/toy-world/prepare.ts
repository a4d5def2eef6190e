/**
 * Writes the toy world's files and its warm-started model, once: everything lands in a folder named by the
 * hash of what produced it (the generated files and the warm-start settings), so a second call with the same
 * settings reuses the model, and a changed prompt template or world gives a new folder rather than a stale
 * model.
 *
 *   node --import tsx infra/toy-world/prepare.ts [--dir .selfplay/toy-world] [--steps N] [--warm-start-seed S]
 *                                                [--run-config FILE]
 *
 * prints one JSON line: `{"dir", "corpus", "heldOut", "model", "warmStart"}`; `--run-config` also writes the
 * toy world's SPICE run config (run-config.ts) to FILE, for `selfplay start --config FILE`.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { toyWorldRunConfig } from './run-config';
import { warmStartSources } from './warm-start-sources';
import { corpus, heldOut, validationExamples, warmStartExamples } from './world';

const ROOT = path.resolve(__dirname, '../..');
const KERNEL_PYTHON = path.join(ROOT, 'infra/kernels/.venv/bin/python');

export interface ToyWorldOptions {
  /** Parent folder of the hashed world folders. */
  dir: string;
  seed: number;
  documents: number;
  heldOutItems: number;
  /** Documents the warm-start examples are made from (each gives a Challenger and three Reasoner examples). */
  warmStartDocuments: number;
  warmStartSteps: number;
  /**
   * The warm start's own seed (the model's initial weights, the order of its batches, its tokenizer's sample):
   * worlds that differ only in it share every file, so their start accuracies show how much the warm start's
   * randomness moves the starting point.
   */
  warmStartSeed: number;
  /** PyTorch threads for the warm start (default: one per core). */
  threads?: number;
}

export const TOY_WORLD_DEFAULTS: ToyWorldOptions = {
  dir: path.join(ROOT, '.selfplay/toy-world'),
  seed: 0,
  documents: 4000,
  heldOutItems: 320,
  warmStartDocuments: 4000,
  warmStartSteps: 5000,
  warmStartSeed: 0,
};

export interface ToyWorld {
  dir: string;
  /** JSONL corpus for `corpus.uri`. */
  corpus: string;
  /** The held-out set, in GSM8K's format. */
  heldOut: string;
  warmStartSeed: number;
  /** The warm-started model directory, for `serve --model`. */
  model: string;
  /** The kernel's warm-start summary (losses per role, seconds, sizes). */
  warmStart: Record<string, unknown>;
}

/**
 * The warm start trains until these greedy validation accuracies are reached (further cosine cycles, see
 * `warm_start.py`): a Reasoner that answers unseen sums and a Challenger that copies a valid task from half
 * its documents. The sampled accuracies, which the held-out evaluation measures, then sit near the teacher's
 * slip rates, whatever step the arithmetic clicked at.
 */
export const WARM_START_TARGETS = { reasoner: 0.95, challenger: 0.5 };

/** Rows as a JSONL file's text. */
export const jsonl = (rows: readonly unknown[]): string =>
  rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

export async function prepareToyWorld(options: Partial<ToyWorldOptions> = {}): Promise<ToyWorld> {
  const o = { ...TOY_WORLD_DEFAULTS, ...options };
  const trained = await trainWorld({
    dir: o.dir,
    files: {
      'corpus.jsonl': jsonl(corpus(o.seed, o.documents)),
      'heldout.jsonl': jsonl(heldOut(o.seed, o.heldOutItems)),
      'warm-start.jsonl': jsonl(warmStartExamples(o.seed, o.warmStartDocuments)),
      'validation.jsonl': jsonl(validationExamples(o.seed)),
    },
    settings: {
      steps: o.warmStartSteps,
      seed: o.seed,
      warmStartSeed: o.warmStartSeed,
      WARM_START_TARGETS,
      // One thread count's warm start is not another's (reduction order); the default (one per core) is
      // left out (JSON drops undefined), so worlds warm-started before this option keep their hash.
      threads: o.threads,
    },
    steps: o.warmStartSteps,
    warmStartSeed: o.warmStartSeed,
    targets: WARM_START_TARGETS,
    ...(o.threads ? { threads: o.threads } : {}),
  });
  return {
    ...trained,
    corpus: path.join(trained.dir, 'corpus.jsonl'),
    heldOut: path.join(trained.dir, 'heldout.jsonl'),
    warmStartSeed: o.warmStartSeed,
  };
}

/** What a world hands the warm start: its files, and what besides them decides the model. */
export interface WorldSpec {
  /** Parent folder of the hashed world folders. */
  dir: string;
  /** The files written into the world's folder; `warm-start.jsonl` among them, and `validation.jsonl` if validated. */
  files: Record<string, string>;
  /** Everything else that decides the model (hashed as JSON, in this key order). */
  settings: Record<string, unknown>;
  steps: number;
  warmStartSeed: number;
  /** Greedy validation accuracy per role that the warm start trains until (`--target ROLE=ACC`). */
  targets: Record<string, number>;
  /** Per role, its share of the warm start's batches and its learning-rate multiplier (the kernel's defaults otherwise). */
  roleWeights?: Record<string, number>;
  roleLearningRates?: Record<string, number>;
  /** Cosine cycles at most, the first included (the kernel's default otherwise). */
  maxCycles?: number;
  threads?: number;
  /**
   * The kernel's word tokenizer (`warm-start --split-words`, word_tokenizer.py), for a world whose model copies
   * names: BPE merges stay inside words, `pieces` (the world's fixed words and tags) are tokens of their own,
   * and a vocabulary of `vocabSize` small enough that names are cut into the syllables they share rather than
   * each trained name into a token of its own. Worlds without it keep warm_start.py's tokenizer and cache key.
   */
  wordTokenizer?: { pieces: readonly string[]; vocabSize: number };
  /**
   * Texts that are tokens of their own in warm_start.py's tokenizer (`warm-start --piece` without
   * `--split-words`, word_tokenizer.py): a world's fixed words that its BPE, which merges across spaces, would
   * fuse with the text around them (SPELL's number words).
   */
  pieces?: readonly string[];
}

/**
 * The world's folder, `dir/<hash>`, named by the hash of its files, settings (a world's role weights among
 * them) and the warm start's code (warm_start.py and the kernel modules it imports), with the warm-started
 * model in `model/`: trained here on the first call, reused after.
 */
export async function trainWorld(
  spec: WorldSpec,
): Promise<{ dir: string; model: string; warmStart: Record<string, unknown> }> {
  const hash = createHash('sha256');
  for (const [name, text] of Object.entries(spec.files)) hash.update(name).update('\0').update(text);
  hash.update(JSON.stringify(spec.settings));
  // Only a world that asks for the word tokenizer or pieces hashes them (and their module): the others' keys
  // stay as they were.
  if (spec.wordTokenizer) hash.update(JSON.stringify(spec.wordTokenizer));
  if (spec.pieces) hash.update(JSON.stringify(spec.pieces));
  const entry = spec.wordTokenizer || spec.pieces ? 'word_tokenizer' : 'warm_start';
  for (const file of warmStartSources(path.join(ROOT, 'infra/kernels/selfplay_kernel'), entry))
    hash.update(path.basename(file)).update('\0').update(readFileSync(file));
  const dir = path.join(spec.dir, hash.digest('hex').slice(0, 16));
  const model = path.join(dir, 'model');
  const summaryFile = path.join(model, 'warm-start.json');
  if (!existsSync(summaryFile)) {
    mkdirSync(dir, { recursive: true });
    for (const [name, text] of Object.entries(spec.files)) writeFileSync(path.join(dir, name), text);
    // Trained into a scratch folder and renamed: an interrupted warm start never leaves a model that looks done.
    const scratch = `${model}.partial`;
    rmSync(scratch, { recursive: true, force: true });
    await warmStartModel(dir, scratch, spec);
    renameSync(scratch, model);
  }
  return { dir, model, warmStart: JSON.parse(readFileSync(summaryFile, 'utf8')) as Record<string, unknown> };
}

async function warmStartModel(dir: string, out: string, spec: WorldSpec): Promise<void> {
  if (!existsSync(KERNEL_PYTHON))
    throw new Error(`no kernel environment at ${KERNEL_PYTHON}: run 'bash infra/kernels/setup.sh'`);
  const examples = path.join(dir, 'warm-start.jsonl');
  const args = ['-m', 'selfplay_kernel', 'warm-start', examples, out, '--steps', String(spec.steps)];
  args.push('--seed', String(spec.warmStartSeed));
  // A world whose roles are scored by a rollout, not one completion (SSP's search agents), has none.
  if (spec.files['validation.jsonl'] !== undefined)
    args.push('--validation', path.join(dir, 'validation.jsonl'));
  const pairs = (flagName: string, values: Record<string, number> = {}): string[] =>
    Object.entries(values).flatMap(([role, value]) => [flagName, `${role}=${value}`]);
  args.push(...pairs('--target', spec.targets));
  args.push(
    ...pairs('--role-weight', spec.roleWeights),
    ...pairs('--role-learning-rate', spec.roleLearningRates),
  );
  args.push(...(spec.maxCycles ? ['--max-cycles', String(spec.maxCycles)] : []));
  args.push(...(spec.threads ? ['--threads', String(spec.threads)] : []));
  if (spec.wordTokenizer) {
    args.push('--split-words', '--vocab-size', String(spec.wordTokenizer.vocabSize));
  }
  // `--piece=TEXT`, not `--piece TEXT`: a piece may begin with a dash ("-seven"), which argparse reads as a flag.
  const pieces = [...(spec.wordTokenizer?.pieces ?? []), ...(spec.pieces ?? [])];
  args.push(...pieces.map((piece) => `--piece=${piece}`));
  const pythonPath = [path.join(ROOT, 'infra/kernels'), process.env.PYTHONPATH].filter(Boolean).join(':');
  // Its log (a loss line every 50 steps) goes to our stderr: the first warm start takes minutes, and whoever
  // waits for it sees it advance.
  const child = spawn(KERNEL_PYTHON, args, {
    env: { ...process.env, PYTHONPATH: pythonPath },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', resolve);
  });
  if (code !== 0) throw new Error(`the toy world's warm start failed (exit code ${code}); its log is above`);
}

/** The value after `name` in command-line `args`. */
export function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const steps = flag(args, '--steps');
  const warmStartSeed = flag(args, '--warm-start-seed');
  const runConfig = flag(args, '--run-config');
  prepareToyWorld({
    ...(flag(args, '--dir') ? { dir: path.resolve(flag(args, '--dir') as string) } : {}),
    ...(steps ? { warmStartSteps: Number(steps) } : {}),
    ...(warmStartSeed ? { warmStartSeed: Number(warmStartSeed) } : {}),
  }).then(
    (world) => {
      if (runConfig)
        writeFileSync(
          runConfig,
          JSON.stringify(toyWorldRunConfig(world, world.warmStartSeed), null, 2) + '\n',
        );
      console.log(JSON.stringify(world));
    },
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
