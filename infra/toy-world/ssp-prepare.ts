/**
 * Writes SSP's toy world (ssp-world.ts) once, in a folder named by the hash of what it holds, as
 * `prepareToyWorld` does for SPICE's: the corpus and its BM25 index (built by the `selfplay index` code), D,
 * the held-out benchmark and the warm-start examples. No model is trained yet: the warm start's validation
 * scores single-turn completions, and a search agent's needs its trajectories scored.
 *
 *   node --import tsx infra/toy-world/ssp-prepare.ts [--dir .selfplay/toy-world-ssp]
 *
 * prints one JSON line: `{"dir", "corpus", "index", "answers", "heldOut", "warmStart"}`.
 */
import { cpSync, existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { openStore } from '../../activities/clients/storage';
import { getJsonl, putJsonl } from '../../activities/clients/storage/codec';
import { seededRng } from '../../activities/lib/rng';
import { INDEX_KEYS } from '../../activities/retrieval/manifest';
import { flag, jsonl, trainWorld } from './prepare';
import { prepareSearchWorld, WORLD_DONE, type SearchWorldFiles } from './search-world-folder';
import { heldOutBenchmark, sspAnswers, sspCorpus, sspWarmStartExamples, sspWordTokenizer } from './ssp-world';

const ROOT = path.resolve(__dirname, '../..');

export interface SspWorldOptions {
  /** Parent folder of the hashed world folders. */
  dir: string;
  seed: number;
  /** Town-founder-birthplace chains (a quarter held out). */
  chains: number;
  /** Held-out benchmark questions, one and two hops alternately (at most half the chains). */
  heldOutItems: number;
  /** Solver trajectories of the warm start (a proposer trajectory every fourth). */
  warmStartItems: number;
}

export const SSP_WORLD_DEFAULTS: SspWorldOptions = {
  dir: path.join(ROOT, '.selfplay/toy-world-ssp'),
  seed: 0,
  chains: 768,
  heldOutItems: 320,
  warmStartItems: 8000,
};

export interface SspWorld extends SearchWorldFiles {
  /** D, for `ssp.answers`. */
  answers: string;
}

export async function prepareSspWorld(options: Partial<SspWorldOptions> = {}): Promise<SspWorld> {
  const o = { ...SSP_WORLD_DEFAULTS, ...options };
  const world = await prepareSearchWorld(o, {
    corpus: jsonl(sspCorpus(o.seed, o.chains)),
    heldOut: jsonl(heldOutBenchmark(o.seed, o.chains, o.heldOutItems)),
    examples: (retriever) => sspWarmStartExamples(o.seed, o.chains, o.warmStartItems, retriever),
    others: { 'answers.jsonl': jsonl(sspAnswers(o.seed, o.chains)) },
  });
  return { ...world, answers: path.join(world.dir, 'answers.jsonl') };
}

/** The options a world's folder was written with (its seed and chain count name its facts). */
export function sspWorldOptions(world: SspWorld): SspWorldOptions {
  return JSON.parse(readFileSync(path.join(world.dir, WORLD_DONE), 'utf8')) as SspWorldOptions;
}

/**
 * The search tool of the `random-search` control: the world's index with its passages moved among its entries
 * (one seeded cycle, so no entry keeps its own), so every search ranks as BM25 ranks it and returns the
 * passages of other, random entries: the same for the same query, never the one it ranked first. Written once,
 * beside the index.
 */
export async function randomSearchIndex(world: SspWorld): Promise<string> {
  const out = path.join(world.dir, 'index-random-search');
  if (existsSync(out)) return out;
  const scratch = `${out}.partial`;
  rmSync(scratch, { recursive: true, force: true });
  cpSync(world.index, scratch, { recursive: true });
  const store = openStore(scratch);
  const passages = (await getJsonl<unknown>(store, INDEX_KEYS.passages)) ?? [];
  const { seed } = sspWorldOptions(world);
  // One cycle through a seeded order: every entry gets the next one's passage, never its own.
  const order = seededRng(seed, 'ssp-world', 'random-search').shuffle(passages.map((_, i) => i));
  const shuffled = new Array<unknown>(passages.length);
  order.forEach((at, k) => (shuffled[at] = passages[order[(k + 1) % order.length] as number]));
  await putJsonl(store, INDEX_KEYS.passages, shuffled);
  renameSync(scratch, out);
  return out;
}

export interface SspWarmStartOptions {
  steps: number;
  /** The warm start's own seed (initial weights, batch order, tokenizer sample); the world's files do not depend on it. */
  warmStartSeed: number;
  /** PyTorch threads (default: one per core; another count is another reduction order, so another model). */
  threads?: number;
}

/**
 * 1,500 steps: 7.8 minutes on one thread of the shared 2-core machine (load about 8), and the solver's greedy
 * answers right on 86 % of training questions through the search loop, its samples on 42 % (docs/learning.md).
 */
export const SSP_WARM_START_DEFAULTS: SspWarmStartOptions = { steps: 1500, warmStartSeed: 0 };

/** The roles' shares of the warm start's batches, about their shares of the examples (a proposer every fourth). */
export const SSP_ROLE_WEIGHTS = { solver: 0.75, proposer: 0.25 };

/**
 * Both roles copy names from a few tokens back, which SPICE's world measured needing larger steps than its
 * arithmetic (its Challenger's 2.5 × the peak, warm_start.py).
 */
export const SSP_ROLE_LEARNING_RATES = { solver: 2.5, proposer: 2.5 };

/**
 * The world's warm-started model, trained once per setting into `<world>/warm-starts/<hash>` with the word
 * tokenizer (`sspWordTokenizer`), one cycle of `steps`: the warm start's own validation scores single
 * completions, a search agent's success is its trajectory's, so it is measured through the search loop
 * afterwards (ssp-validate.ts) rather than trained to a target.
 */
export async function warmStartSspWorld(
  world: SspWorld,
  options: Partial<SspWarmStartOptions> = {},
): Promise<{ dir: string; model: string; warmStart: Record<string, unknown> }> {
  const o = { ...SSP_WARM_START_DEFAULTS, ...options };
  const { seed, chains } = sspWorldOptions(world);
  const wordTokenizer = sspWordTokenizer(seed, chains);
  return trainWorld({
    dir: path.join(world.dir, 'warm-starts'),
    files: { 'warm-start.jsonl': readFileSync(world.warmStart, 'utf8') },
    settings: { ...o, SSP_ROLE_WEIGHTS, SSP_ROLE_LEARNING_RATES, wordTokenizer },
    steps: o.steps,
    warmStartSeed: o.warmStartSeed,
    targets: {},
    roleWeights: SSP_ROLE_WEIGHTS,
    roleLearningRates: SSP_ROLE_LEARNING_RATES,
    wordTokenizer,
    ...(o.threads ? { threads: o.threads } : {}),
  });
}

if (require.main === module) {
  const dir = flag(process.argv.slice(2), '--dir');
  prepareSspWorld(dir ? { dir: path.resolve(dir) } : {}).then(
    (world) => console.log(JSON.stringify(world)),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
