import type { RecipeContext } from './types';
import { runSearchLoop } from '../tools/search-loop';
import type { SearchLoopSpec, Trajectory, TrajectoryCheckpoint } from '../tools/types';

/** Where a unit's multi-turn trajectory `name` (e.g. `solver-3`) keeps its finished turns. */
export const trajectoryCheckpoint = (ctx: RecipeContext, unit: number, name: string): TrajectoryCheckpoint =>
  ctx.unitPart<Trajectory>(unit, `traj-${name}`);

/** What a stage's context decides for every search rollout of a run. */
type FromContext =
  | 'llm'
  | 'retriever'
  | 'topP'
  | 'maxTokens'
  | 'topK'
  | 'passageTokens'
  | 'responseTokens'
  | 'signal'
  | 'checkpoint';

/**
 * A search rollout inside a recipe's stage: the role's endpoint, the configured retriever and its budgets,
 * the run's top-p and token budget, the activity's signal, and trajectory `name` of `unit` checkpointed after
 * every finished turn, so a retried shard resumes it. The recipe gives the rest (prompt, seed, temperature,
 * syntax, final tags, turn budget).
 */
export async function searchInStage(
  ctx: RecipeContext,
  spec: Omit<SearchLoopSpec, FromContext> & { checkpoint: { unit: number; name: string } },
): Promise<Trajectory> {
  const { config } = ctx;
  return runSearchLoop({
    ...spec,
    llm: ctx.llm(spec.role),
    retriever: await ctx.retriever(),
    topP: config.sampling.topP,
    maxTokens: config.sampling.maxTokens,
    topK: config.retrieval.topK,
    passageTokens: config.retrieval.passageTokens,
    ...(config.retrieval.responseTokens ? { responseTokens: config.retrieval.responseTokens } : {}),
    checkpoint: trajectoryCheckpoint(ctx, spec.checkpoint.unit, spec.checkpoint.name),
    signal: ctx.signal,
  });
}
