/**
 * The SCOPE run the toy world is made for (scope-world.ts): the paper's recipe, its rewards and GRPO, the
 * Challenger and the Solver as two policies on two kernels, and the frozen judge answered by the world's
 * rule-based grader (scope-grader.ts) at `judgeUrl`. What differs from the preset and why:
 * - the `joint` schedule, not the paper's stages: a stage is K = 20 steps of one policy and a Solver step
 *   gathers 256 selected tasks over up to four rounds of candidates, so one round of the paper is 40
 *   iterations of hundreds of tasks, more than a CPU run of 20 affords; `joint` steps both policies every
 *   iteration, the Solver on the tasks of the Challenger's own rollouts;
 * - B = 16 source documents and G = 4 (Challenger rollouts per document, Solver rollouts per valid task), so
 *   an iteration is a few hundred short trajectories;
 * - the world's shape: long-form QA only; search budgets of one or two (the chains have two facts), two three
 *   times as often as one, since with two searches the Challenger chooses what to ask (scope-world.ts's
 *   ladder), the choice its co-evolution moves; the Solver's two searches (`SCOPE_SOLVER_MAX_SEARCHES`, what
 *   its warm start's prompt says); one to five rubrics (one per fact the task asks) written with the
 *   retrieved passages as context, so a task that needs the Challenger's second search gets the rubric of
 *   that search's fact;
 * - a learning rate for a model of about 0.4 M parameters trained from scratch (SPICE's world's, 3e-4);
 * - held-out evaluation by the Solver's own search rollout (`evaluation.rollout: "search"`) on the world's
 *   held-out tasks; the world's figure is the rubric score the grader gives each answer (scope-learning.ts).
 */
import { SCOPE_SOLVER_MAX_SEARCHES, SCOPE_WORLD_SEARCH } from './scope-world';
import { cpuSizedRun, heldOutEvaluation } from './run-config';
import { SEARCH_WORLD_GRADER_MODEL } from './search-world-folder';

export const SCOPE_POLICIES = { challenger: 'toy-challenger', solver: 'toy-solver' } as const;

/** Where the run's roles are served: each policy's kernel, and the grader. */
export interface ScopeEndpoints {
  kernels: Record<string, string>;
  judgeUrl: string;
}

export function scopeWorldRunConfig(
  world: { sources: string; index: string; heldOut: string },
  seed: number,
  endpoints: ScopeEndpoints,
): Record<string, unknown> {
  const kernel = (policy: string): string => {
    const url = endpoints.kernels[policy];
    if (url === undefined)
      throw new Error(`SCOPE's toy world runs ${policy} on a kernel of its own: none given`);
    return url;
  };
  const endpoint = (policy: string) => ({
    baseUrl: `${kernel(policy)}/v1`,
    model: policy,
    apiKeyEnv: 'SELFPLAY_KERNEL_TOKEN',
  });
  const { challenger, solver } = SCOPE_POLICIES;
  return {
    ...cpuSizedRun('scope', world.sources, seed),
    groupSize: 4,
    retrieval: {
      index: world.index,
      topK: SCOPE_WORLD_SEARCH.topK,
      passageTokens: SCOPE_WORLD_SEARCH.passageTokens,
    },
    sampling: { temperature: 1.0, topP: 1.0, maxTokens: SCOPE_WORLD_SEARCH.maxTokens },
    scope: {
      taskTypes: ['long_form_qa'],
      searchTurnWeights: [1, 3, 0],
      solverMaxSearches: SCOPE_SOLVER_MAX_SEARCHES,
      rubrics: { min: 1, max: 5 },
      rubricContext: 'source_and_retrieved',
      schedule: { mode: 'joint' },
      judgeSampling: {
        gate: { temperature: 0, maxTokens: 64 },
        rubrics: { temperature: 0, maxTokens: 256 },
        grade: { temperature: 0.6, maxTokens: 64 },
      },
    },
    inference: {
      requestTimeoutSeconds: 300,
      roles: {
        challenger: endpoint(challenger),
        solver: endpoint(solver),
        eval: endpoint(solver),
        judge: { baseUrl: endpoints.judgeUrl, model: SEARCH_WORLD_GRADER_MODEL, frozen: true },
      },
    },
    training: {
      policies: {
        [challenger]: { roles: ['challenger'], trainerUrl: kernel(challenger) },
        [solver]: { roles: ['solver', 'eval'], trainerUrl: kernel(solver) },
      },
      estimator: 'grpo',
      optimizer: { learningRate: 3e-4, maxGradNorm: 1.0 },
    },
    weightSync: { engine: 'kernel' },
    evaluation: {
      ...heldOutEvaluation(world.heldOut, seed, SCOPE_WORLD_SEARCH.maxTokens),
      rollout: 'search',
      n: 4,
    },
  };
}
