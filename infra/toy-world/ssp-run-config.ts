/**
 * The SSP run the toy world's SSP variant is made for (ssp-world.ts): the paper's recipe, rewards, rule filter,
 * RAG verification with 4 noise blocks and replay pool, sized for a CPU. What differs from the preset and why:
 * - B = `SSP_WORLD_RUN.batchSize` answers of D per iteration and n = `groupSize` solver trajectories each, so an
 *   iteration takes about 20 s on the shared 2-core machine;
 * - the search as the warm start searched (`SSP_WORLD_SEARCH`: top 3, 500-token passages, ≤ 10 turns and 4,096
 *   tokens a trajectory), on the world's BM25 index;
 * - the RAG verifier and the judge are the world's rule-based grader (ssp-grader.ts), a frozen endpoint per role
 *   (`inference.roles`): the warm start teaches neither call, and the policy judging its own answers is not
 *   what a learning run should measure;
 * - a learning rate for a model of about 0.2 M parameters trained from scratch, not 1e-6, and no KL to a
 *   reference (the other toy worlds' settings);
 * - held-out accuracy by agentic evaluation (`evaluation.rollout: "search"`): the solver's search rollout on
 *   questions about held-out chains, whose entities no answer of D, example or warm-start trajectory names,
 *   `EVALUATION_SAMPLES` samples per item at the run's temperature.
 */
import { EVALUATE_EVERY, EVALUATION_SAMPLES, TOY_WORLD_BENCHMARK, TOY_WORLD_POLICY } from './run-config';
import { SEARCH_WORLD_GRADER_MODEL } from './search-world-folder';
import { SSP_WORLD_SEARCH } from './ssp-world';

/** The run's size: answers per iteration, solver trajectories per question, held-out items evaluated. */
export const SSP_WORLD_RUN = { iterations: 10, batchSize: 16, shardSize: 4, groupSize: 5, heldOutItems: 96 };

export function sspWorldRunConfig(
  world: { answers: string; index: string; heldOut: string },
  graderUrl: string,
  seed = 0,
): Record<string, unknown> {
  const { topK, passageTokens, maxTurns, maxTokens } = SSP_WORLD_SEARCH;
  const grader = { baseUrl: graderUrl, model: SEARCH_WORLD_GRADER_MODEL, frozen: true };
  return {
    recipe: 'ssp',
    iterations: SSP_WORLD_RUN.iterations,
    seed,
    batchSize: SSP_WORLD_RUN.batchSize,
    shardSize: SSP_WORLD_RUN.shardSize,
    groupSize: SSP_WORLD_RUN.groupSize,
    sampling: { temperature: 1.0, topP: 1.0, maxTokens },
    ssp: { answers: world.answers, maxTurns },
    retrieval: { index: world.index, kind: 'bm25', topK, passageTokens },
    training: {
      policy: TOY_WORLD_POLICY,
      loss: { klCoef: 0 },
      optimizer: { learningRate: 3e-4, maxGradNorm: 1.0 },
    },
    weightSync: { engine: 'kernel' },
    inference: { requestTimeoutSeconds: 300, roles: { verifier: grader, judge: grader } },
    evaluation: {
      every: EVALUATE_EVERY,
      atStart: true,
      benchmarks: [{ name: TOY_WORLD_BENCHMARK, uri: world.heldOut, limit: SSP_WORLD_RUN.heldOutItems }],
      n: EVALUATION_SAMPLES,
      seed,
      temperature: 1.0,
      maxTokens,
      rollout: 'search',
    },
  };
}
