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
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore } from '../../activities/clients/storage';
import { getJsonl, putJsonl } from '../../activities/clients/storage/codec';
import { seededRng } from '../../activities/lib/rng';
import { buildIndex } from '../../activities/retrieval/build';
import { INDEX_KEYS } from '../../activities/retrieval/manifest';
import { loadRetriever } from '../../activities/retrieval/retriever';
import { flag, jsonl, trainWorld } from './prepare';
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

export interface SspWorld {
  dir: string;
  /** JSONL corpus (`{"id","title","text"}`), every chain's documents. */
  corpus: string;
  /** The BM25 index of the corpus, for `retrieval.index`. */
  index: string;
  /** D, for `ssp.answers`. */
  answers: string;
  /** `{"id","question","answer"}` about held-out chains, for `selfplay eval --rollout search`. */
  heldOut: string;
  /** `{"messages","completion","role","lossMaskSpans"}` per line. */
  warmStart: string;
}

/** The file (written last) whose presence says a world's folder is complete. */
const DONE = 'world.json';

export async function prepareSspWorld(options: Partial<SspWorldOptions> = {}): Promise<SspWorld> {
  const o = { ...SSP_WORLD_DEFAULTS, ...options };
  const corpus = jsonl(sspCorpus(o.seed, o.chains));
  const files: Record<string, string> = {
    'corpus.jsonl': corpus,
    'answers.jsonl': jsonl(sspAnswers(o.seed, o.chains)),
    'heldout.jsonl': jsonl(heldOutBenchmark(o.seed, o.chains, o.heldOutItems)),
    'warm-start.jsonl': jsonl(await warmStart(corpus, o)),
  };
  const hash = createHash('sha256');
  for (const [name, text] of Object.entries(files)) hash.update(name).update('\0').update(text);
  const dir = path.join(o.dir, hash.digest('hex').slice(0, 16));
  const world: SspWorld = {
    dir,
    corpus: path.join(dir, 'corpus.jsonl'),
    index: path.join(dir, 'index'),
    answers: path.join(dir, 'answers.jsonl'),
    heldOut: path.join(dir, 'heldout.jsonl'),
    warmStart: path.join(dir, 'warm-start.jsonl'),
  };
  if (!existsSync(path.join(dir, DONE))) {
    // A folder an interrupted call left has no DONE file: it is written again from scratch.
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
    await buildIndex({ corpus: world.corpus, out: world.index, kind: 'bm25' });
    writeFileSync(path.join(dir, DONE), JSON.stringify({ ...o, dir: undefined }) + '\n');
  }
  return world;
}

/**
 * The warm-start examples, searched on an index of `corpus` built in a scratch folder: they are part of what
 * names the world's folder, so they exist before it. BM25 is deterministic, so the world's own index answers
 * every query alike.
 */
async function warmStart(corpus: string, o: SspWorldOptions) {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'ssp-world-'));
  try {
    writeFileSync(path.join(scratch, 'corpus.jsonl'), corpus);
    const index = path.join(scratch, 'index');
    await buildIndex({ corpus: path.join(scratch, 'corpus.jsonl'), out: index, kind: 'bm25' });
    const retriever = await loadRetriever(index, { apiKey: 'EMPTY' });
    return await sspWarmStartExamples(o.seed, o.chains, o.warmStartItems, retriever);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The options a world's folder was written with (its seed and chain count name its facts). */
export function sspWorldOptions(world: SspWorld): SspWorldOptions {
  return JSON.parse(readFileSync(path.join(world.dir, DONE), 'utf8')) as SspWorldOptions;
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
