/**
 * The SPICE run the toy world is made for: the paper's recipe and estimator (Dr.GRPO with PPO-clip, the
 * Gaussian variance reward, ρ = −0.1 for invalid tasks), sized for a CPU. What differs from the paper's
 * preset and why:
 * - B = 16 documents and G = 8, so an iteration takes seconds on two cores;
 * - free-form Integer tasks only (the world's documents hold counts), one type-selection call per document;
 * - generations of at most 24 tokens (the world's answers are about a dozen), and Dr.GRPO's
 *   normaliser set to that budget, as the paper sets it to its own generation budget;
 * - a task whose stated sum is wrong is invalid (`spice.refuteArithmeticAnswers`): without it the small
 *   Challenger and Reasoner collude, the Challenger stating 9 for every sum and the Reasoner learning to answer
 *   9, so both rewards rise while held-out accuracy falls (measured: 16% to 5% over 20 iterations);
 * - a task whose answer its document does not state is invalid (`spice.requireAnswerInDocument`): the
 *   Challenger otherwise finds one-digit sums below ten, which no document holds and the warm start never
 *   taught, and by iteration 12 writes nothing else;
 * - a learning rate for a model of about 0.4 M parameters trained from scratch, not 1e-6: 3e-4, the largest
 *   tried that does not cost held-out accuracy in the first steps (1e-3 lost 9 points by iteration 2 and
 *   2e-3 lost 19, measured with `npm run bench -- learning`);
 * - held-out accuracy measured on the world's held-out set before the first step and after every
 *   `EVALUATE_EVERY`-th, as the mean correctness of `EVALUATION_SAMPLES` samples per item at the sampling
 *   temperature (a pass@1 estimate: the policy as it plays, not its greedy mode). 480 items × 8 samples put
 *   one evaluation's standard error under a point; evaluating every fifth version keeps its cost (about as
 *   long as an iteration) a fifth of the run's. The samples are seeded by the run's seed, so runs of other
 *   seeds do not share one draw of the start's error.
 */
export const TOY_WORLD_POLICY = 'toy';
export const TOY_WORLD_BENCHMARK = 'toy-heldout';
export const EVALUATION_SAMPLES = 8;
export const EVALUATE_EVERY = 5;

/** The run config for a world's files (its corpus and held-out set, paths or URIs) and a run seed. */
export function toyWorldRunConfig(
  world: { corpus: string; heldOut: string },
  seed = 0,
): Record<string, unknown> {
  const maxTokens = 24;
  return {
    ...cpuSizedRun('spice', world.corpus, seed),
    sampling: { temperature: 1.0, topP: 1.0, maxTokens },
    spice: {
      taskFormats: 'free_form',
      typeSelectionAttempts: 1,
      maxAttempts: 8,
      refuteArithmeticAnswers: true,
      requireAnswerInDocument: true,
    },
    training: {
      policy: TOY_WORLD_POLICY,
      estimator: 'dr_grpo',
      loss: { normalizerConstant: maxTokens },
      optimizer: { learningRate: 3e-4, maxGradNorm: 1.0 },
    },
    weightSync: { engine: 'kernel' },
    inference: { requestTimeoutSeconds: 300 },
    evaluation: heldOutEvaluation(world.heldOut, seed, 10),
  };
}

/** A toy world's run of `recipe` on its corpus, sized for a CPU: B = 16, G = 8, 20 iterations. */
export function cpuSizedRun(recipe: string, corpus: string, seed: number): Record<string, unknown> {
  return {
    recipe,
    iterations: 20,
    seed,
    batchSize: 16,
    shardSize: 4,
    groupSize: 8,
    corpus: { uri: corpus, maxSegmentChars: 2000 },
  };
}

/** The held-out evaluation of a toy world's run (see above), answers of at most `maxTokens`. */
export function heldOutEvaluation(heldOut: string, seed: number, maxTokens: number): Record<string, unknown> {
  return {
    every: EVALUATE_EVERY,
    atStart: true,
    benchmarks: [{ name: TOY_WORLD_BENCHMARK, uri: heldOut }],
    n: EVALUATION_SAMPLES,
    seed,
    temperature: 1.0,
    maxTokens,
  };
}
