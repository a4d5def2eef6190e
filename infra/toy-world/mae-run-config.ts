/**
 * The MAE run the toy world's MAE variant is made for (mae-world.ts): the paper's recipe with its rewards,
 * gate and Task-Relative REINFORCE++, sized for a CPU. What differs from the preset and why:
 * - B = 64 units and N_sample = 4 Solver answers per proposed question, so an iteration takes seconds;
 * - no reference questions (`referenceRatio: 0`, one of the paper's settings): the Proposer writes from L2;
 * - D0 is the world's 64 seed questions (`mae.seedQuestions`), and the questions of held-out facts never
 *   enter D (`mae.excludeQuestions`), so no held-out question is a trained Solver or Judge row;
 * - generations of at most 24 tokens (the world's longest, a Judge's grading, is 20 with its end);
 * - a learning rate for a model of about 0.4 M parameters trained from scratch, not 1e-6;
 * - held-out accuracy on SPICE's world's held-out set, asked with MAE's Solver prompt (L1) and read from the
 *   `\boxed{}` inside its `<answer>`, as SPICE's world measures it otherwise (run-config.ts).
 */
import { solverMessages } from '../../activities/recipes/mae/prompts';
import { heldOutEvaluation, TOY_WORLD_POLICY } from './run-config';

/** MAE's Solver prompt with the benchmark question's place marked, for `evaluation.template`. */
export const MAE_EVAL_TEMPLATE = { user: solverMessages('{question}')[0]?.content ?? '' };

export function maeWorldRunConfig(
  world: { heldOut: string; seedQuestions: string; excludedQuestions: string },
  seed = 0,
): Record<string, unknown> {
  return {
    recipe: 'mae',
    iterations: 20,
    seed,
    batchSize: 64,
    shardSize: 16,
    groupSize: 4,
    sampling: { temperature: 1.0, topP: 1.0, maxTokens: 24 },
    mae: {
      referenceRatio: 0,
      seedQuestions: world.seedQuestions,
      excludeQuestions: world.excludedQuestions,
    },
    training: {
      policy: TOY_WORLD_POLICY,
      optimizer: { learningRate: 3e-4, maxGradNorm: 1.0 },
    },
    weightSync: { engine: 'kernel' },
    inference: { requestTimeoutSeconds: 300 },
    evaluation: { ...heldOutEvaluation(world.heldOut, seed, 12), template: MAE_EVAL_TEMPLATE },
  };
}
