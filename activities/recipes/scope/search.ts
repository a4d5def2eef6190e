import type { RecipeContext } from '../types';
import type { ChatMessage } from '../../clients/trainer-contract';
import { seedOf } from '../../lib/rng';
import { runSearchLoop } from '../../tools/search-loop';
import type { SearchLoopSpec, Trajectory } from '../../tools/types';

/**
 * One search trajectory of a SCOPE role (scope.md §3): the run's sampling settings, the configured
 * retriever (top-k passages, each cut to the passage budget), the recipe's search syntax, and a seed from
 * (run seed, iteration, what, …) so a retried unit sends the same requests and, resuming from the
 * trajectory's checkpoint, continues from its last finished turn.
 */
export async function searchTrajectory(
  ctx: RecipeContext,
  request: {
    role: string;
    call: string;
    messages: ChatMessage[];
    finalTags: string[];
    maxTurns: number;
    searchLimit?: SearchLoopSpec['searchLimit'];
    /** Where the trajectory's finished turns are kept, so a retried unit resumes it (`trajectoryCheckpoint`). */
    checkpoint: SearchLoopSpec['checkpoint'];
    seedParts: Array<string | number>;
  },
): Promise<Trajectory> {
  const { config, iteration, signal } = ctx;
  const { seedParts, ...rest } = request;
  return runSearchLoop({
    ...rest,
    llm: ctx.llm(request.role),
    retriever: await ctx.retriever(),
    seed: seedOf(config.seed, iteration, ...seedParts),
    temperature: config.sampling.temperature,
    topP: config.sampling.topP,
    syntax: config.scope.searchSyntax,
    maxTokens: config.sampling.maxTokens,
    topK: config.retrieval.topK,
    passageTokens: config.retrieval.passageTokens,
    signal,
  });
}
