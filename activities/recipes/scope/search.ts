import type { RecipeContext } from '../types';
import type { ChatMessage } from '../../clients/trainer-contract';
import { seedOf } from '../../lib/rng';
import { searchInStage } from '../search-rollout';
import type { SearchLoopSpec, SolverSearch, Trajectory } from '../../tools/types';
import type { RunConfig } from '../../../config/schema';
import { solverMessages } from './prompts';

/** The Solver's turns: up to `solverMaxSearches` searches, and one more for its answer. */
export const solverTurns = (config: RunConfig): number => config.scope.solverMaxSearches + 1;

/**
 * The Solver's search for one task (scope.md §1, App. H): the question alone, its searches in the configured
 * syntax, then a final `<answer>`.
 */
export const scopeSolverSearch = (config: RunConfig, question: string): SolverSearch => ({
  messages: solverMessages(question, config.scope.solverMaxSearches, config.scope.searchSyntax),
  syntax: config.scope.searchSyntax,
  finalTags: ['answer'],
  maxTurns: solverTurns(config),
});

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
    /** The plan unit and the trajectory's name within it (e.g. `solver-0-3`): a retried unit resumes it. */
    checkpoint: { unit: number; name: string };
    seedParts: Array<string | number>;
  },
): Promise<Trajectory> {
  const { config, iteration } = ctx;
  const { seedParts, ...rest } = request;
  return searchInStage(ctx, {
    ...rest,
    seed: seedOf(config.seed, iteration, ...seedParts),
    temperature: config.sampling.temperature,
    syntax: config.scope.searchSyntax,
  });
}
