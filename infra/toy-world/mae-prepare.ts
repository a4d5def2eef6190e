/**
 * Writes MAE's toy world (mae-world.ts) and its warm-started model, once, in a folder named by the hash of
 * what produced them, as `prepareToyWorld` does for SPICE's (`trainWorld`).
 */
import path from 'node:path';
import { heldOut } from './world';
import { excludedQuestions, maeValidationExamples, maeWarmStartExamples, seedQuestions } from './mae-world';
import { jsonl, trainWorld } from './prepare';

const ROOT = path.resolve(__dirname, '../..');

export interface MaeWorldOptions {
  /** Parent folder of the hashed world folders. */
  dir: string;
  seed: number;
  heldOutItems: number;
  /** |D0|: seed questions, one rung in four each. */
  seedQuestions: number;
  /** Indices of warm-start examples (each gives a Proposer, four Solver, four Judge and one rating example). */
  warmStartItems: number;
  warmStartSteps: number;
  /** The warm start's own seed (initial weights, batch order, tokenizer sample); the files do not depend on it. */
  warmStartSeed: number;
  /** PyTorch threads for the warm start (default: one per core). */
  threads?: number;
}

export const MAE_WORLD_DEFAULTS: MaeWorldOptions = {
  dir: path.join(ROOT, '.selfplay/toy-world-mae'),
  seed: 0,
  heldOutItems: 320,
  seedQuestions: 64,
  warmStartItems: 4000,
  warmStartSteps: 5000,
  warmStartSeed: 0,
};

/**
 * The warm start trains until the Solver's greedy answers are right on 95 % of the validation questions and the
 * Judge's greedy gradings on 90 % (its sampled ones, which the run uses, sit near its slip rates).
 */
export const MAE_WARM_START_TARGETS = { solver: 0.95, judge_answer: 0.9 };

/**
 * The roles' shares of the warm start's batches: arithmetic (Solver and Judge) takes most; writing a question
 * of the ladder, from a prompt that never changes, and rating one take little.
 */
export const MAE_ROLE_WEIGHTS = { proposer: 0.1, solver: 0.45, judge_answer: 0.35, judge_question: 0.1 };

export interface MaeWorld {
  dir: string;
  /** The held-out set (SPICE's world's, GSM8K's format). */
  heldOut: string;
  /** D0, for `mae.seedQuestions`. */
  seedQuestions: string;
  /** The questions of held-out facts, for `mae.excludeQuestions`. */
  excludedQuestions: string;
  warmStartSeed: number;
  /** The warm-started model directory, for `serve --model`. */
  model: string;
  /** The kernel's warm-start summary (losses per role, validations, seconds). */
  warmStart: Record<string, unknown>;
}

export async function prepareMaeWorld(options: Partial<MaeWorldOptions> = {}): Promise<MaeWorld> {
  const o = { ...MAE_WORLD_DEFAULTS, ...options };
  const trained = await trainWorld({
    dir: o.dir,
    files: {
      'heldout.jsonl': jsonl(heldOut(o.seed, o.heldOutItems)),
      'seed-questions.jsonl': jsonl(seedQuestions(o.seed, o.seedQuestions)),
      'excluded-questions.jsonl': jsonl(excludedQuestions()),
      'warm-start.jsonl': jsonl(maeWarmStartExamples(o.seed, o.warmStartItems)),
      'validation.jsonl': jsonl(maeValidationExamples(o.seed)),
    },
    settings: {
      steps: o.warmStartSteps,
      seed: o.seed,
      warmStartSeed: o.warmStartSeed,
      MAE_WARM_START_TARGETS,
      MAE_ROLE_WEIGHTS,
      // One thread count's warm start is not another's (reduction order): each is cached apart.
      threads: o.threads,
    },
    steps: o.warmStartSteps,
    warmStartSeed: o.warmStartSeed,
    targets: MAE_WARM_START_TARGETS,
    roleWeights: MAE_ROLE_WEIGHTS,
    ...(o.threads ? { threads: o.threads } : {}),
  });
  return {
    ...trained,
    heldOut: path.join(trained.dir, 'heldout.jsonl'),
    seedQuestions: path.join(trained.dir, 'seed-questions.jsonl'),
    excludedQuestions: path.join(trained.dir, 'excluded-questions.jsonl'),
    warmStartSeed: o.warmStartSeed,
  };
}
