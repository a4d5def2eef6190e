/**
 * Writes SCOPE's toy world (scope-world.ts) once, in a folder named by the hash of what it holds, as SSP's
 * (ssp-prepare.ts): the corpus of every chain and its BM25 index (the `selfplay index` code), the Challenger's
 * source documents, the held-out benchmark and the warm-start examples; then warm-starts the one model both
 * policies start from.
 *
 *   node --import tsx infra/toy-world/scope-prepare.ts [--dir .selfplay/toy-world-scope]
 *
 * prints one JSON line: `{"dir", "corpus", "index", "sources", "heldOut", "warmStart"}`.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildIndex } from '../../activities/retrieval/build';
import { loadRetriever } from '../../activities/retrieval/retriever';
import { flag, jsonl, trainWorld } from './prepare';
import { sspCorpus } from './ssp-world';
import {
  scopeHeldOutBenchmark,
  scopeSourceCorpus,
  scopeWarmStartExamples,
  scopeWordTokenizer,
} from './scope-world';

const ROOT = path.resolve(__dirname, '../..');

export interface ScopeWorldOptions {
  dir: string;
  seed: number;
  /** Town-founder-birthplace chains (a quarter held out), SSP's world's default. */
  chains: number;
  /** Held-out tasks, one and two facts alternately (at most half the chains). */
  heldOutItems: number;
  /** Warm-start indices: a Solver and a Challenger trajectory each. */
  warmStartItems: number;
}

export const SCOPE_WORLD_DEFAULTS: ScopeWorldOptions = {
  dir: path.join(ROOT, '.selfplay/toy-world-scope'),
  seed: 0,
  chains: 768,
  heldOutItems: 128,
  warmStartItems: 4000,
};

export interface ScopeWorld {
  dir: string;
  /** Every chain's documents (`{"id","title","text"}`): what the index holds and the grader reads facts from. */
  corpus: string;
  index: string;
  /** The training chains' town documents, the run's `corpus.uri`. */
  sources: string;
  /** `{"id","question","answer"}` about held-out chains. */
  heldOut: string;
  warmStart: string;
}

const DONE = 'world.json';

export async function prepareScopeWorld(options: Partial<ScopeWorldOptions> = {}): Promise<ScopeWorld> {
  const o = { ...SCOPE_WORLD_DEFAULTS, ...options };
  const corpus = jsonl(sspCorpus(o.seed, o.chains));
  const files: Record<string, string> = {
    'corpus.jsonl': corpus,
    'sources.jsonl': jsonl(scopeSourceCorpus(o.seed, o.chains)),
    'heldout.jsonl': jsonl(scopeHeldOutBenchmark(o.seed, o.chains, o.heldOutItems)),
    'warm-start.jsonl': jsonl(await warmStartExamples(corpus, o)),
  };
  const hash = createHash('sha256');
  for (const [name, text] of Object.entries(files)) hash.update(name).update('\0').update(text);
  const dir = path.join(o.dir, hash.digest('hex').slice(0, 16));
  const world: ScopeWorld = {
    dir,
    corpus: path.join(dir, 'corpus.jsonl'),
    index: path.join(dir, 'index'),
    sources: path.join(dir, 'sources.jsonl'),
    heldOut: path.join(dir, 'heldout.jsonl'),
    warmStart: path.join(dir, 'warm-start.jsonl'),
  };
  if (!existsSync(path.join(dir, DONE))) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
    await buildIndex({ corpus: world.corpus, out: world.index, kind: 'bm25' });
    writeFileSync(path.join(dir, DONE), JSON.stringify({ ...o, dir: undefined }) + '\n');
  }
  return world;
}

/** The examples, searched on a scratch index of `corpus` (BM25 is deterministic: the world's answers alike). */
async function warmStartExamples(corpus: string, o: ScopeWorldOptions) {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'scope-world-'));
  try {
    writeFileSync(path.join(scratch, 'corpus.jsonl'), corpus);
    const index = path.join(scratch, 'index');
    await buildIndex({ corpus: path.join(scratch, 'corpus.jsonl'), out: index, kind: 'bm25' });
    const retriever = await loadRetriever(index, { apiKey: 'EMPTY' });
    return await scopeWarmStartExamples(o.seed, o.chains, o.warmStartItems, retriever);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

export interface ScopeWarmStartOptions {
  steps: number;
  warmStartSeed: number;
  threads?: number;
}

/** SSP's world's warm start (its 1,500 steps, its multiplier for roles that copy names). */
export const SCOPE_WARM_START_DEFAULTS: ScopeWarmStartOptions = { steps: 1500, warmStartSeed: 0 };
export const SCOPE_ROLE_WEIGHTS = { solver: 0.5, challenger: 0.5 };
export const SCOPE_ROLE_LEARNING_RATES = { solver: 2.5, challenger: 2.5 };

/** The model both policies start from, trained once per setting into `<world>/warm-starts/<hash>`. */
export async function warmStartScopeWorld(
  world: ScopeWorld,
  options: Partial<ScopeWarmStartOptions> = {},
): Promise<{ dir: string; model: string; warmStart: Record<string, unknown> }> {
  const o = { ...SCOPE_WARM_START_DEFAULTS, ...options };
  const wordTokenizer = scopeWordTokenizer();
  return trainWorld({
    dir: path.join(world.dir, 'warm-starts'),
    files: { 'warm-start.jsonl': readFileSync(world.warmStart, 'utf8') },
    settings: { ...o, SCOPE_ROLE_WEIGHTS, SCOPE_ROLE_LEARNING_RATES, wordTokenizer },
    steps: o.steps,
    warmStartSeed: o.warmStartSeed,
    targets: {},
    roleWeights: SCOPE_ROLE_WEIGHTS,
    roleLearningRates: SCOPE_ROLE_LEARNING_RATES,
    wordTokenizer,
    ...(o.threads ? { threads: o.threads } : {}),
  });
}

if (require.main === module) {
  const dir = flag(process.argv.slice(2), '--dir');
  prepareScopeWorld(dir ? { dir: path.resolve(dir) } : {})
    .then(async (world) => {
      console.log(JSON.stringify(world));
      console.log(JSON.stringify(await warmStartScopeWorld(world, { threads: 1 })));
    })
    .catch((err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    });
}
