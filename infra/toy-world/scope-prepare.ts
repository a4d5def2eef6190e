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
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { flag, jsonl, trainWorld } from './prepare';
import { prepareSearchWorld, type SearchWorldFiles } from './search-world-folder';
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

export interface ScopeWorld extends SearchWorldFiles {
  /** The training chains' town documents, the run's `corpus.uri`. */
  sources: string;
}

export async function prepareScopeWorld(options: Partial<ScopeWorldOptions> = {}): Promise<ScopeWorld> {
  const o = { ...SCOPE_WORLD_DEFAULTS, ...options };
  const world = await prepareSearchWorld(o, {
    corpus: jsonl(sspCorpus(o.seed, o.chains)),
    heldOut: jsonl(scopeHeldOutBenchmark(o.seed, o.chains, o.heldOutItems)),
    examples: (retriever) => scopeWarmStartExamples(o.seed, o.chains, o.warmStartItems, retriever),
    others: { 'sources.jsonl': jsonl(scopeSourceCorpus(o.seed, o.chains)) },
  });
  return { ...world, sources: path.join(world.dir, 'sources.jsonl') };
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
