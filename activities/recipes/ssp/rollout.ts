import type { RunConfig } from '../../../config/schema';
import { searchInStage } from '../search-rollout';
import type { RecipeContext } from '../types';
import type { ChatMessage } from '../../clients/trainer-contract';
import type { SolverSearch, Trajectory } from '../../tools/types';
import { trajectoryTokenFields } from '../../tools/search-loop';
import { tagContents } from '../../scoring/tags';
import { solverMessages } from './prompts';
import type { StoredTrajectory } from './records';

/** How SSP's roles search (ssp.md §1.2, §4): Search-R1 tags, at most `ssp.maxTurns` assistant turns. */
const searchSettings = (config: RunConfig) => ({
  syntax: 'search_tags' as const,
  maxTurns: config.ssp.maxTurns,
});

/** The solver's search for one question (ssp.md §1.7): its prompt, then a final `<answer>`. */
export const sspSolverSearch = (config: RunConfig, question: string): SolverSearch => ({
  ...searchSettings(config),
  messages: solverMessages(question),
  finalTags: ['answer'],
});

/**
 * One multi-turn search trajectory of either role (ssp.md §1.2, §1.7, §4): Search-R1 tags, top-k passages
 * per search, ≤ `ssp.maxTurns` assistant turns and `sampling.maxTokens` tokens over the whole trajectory.
 * Every finished turn is checkpointed under (unit, name), so a shard retried after a crash resumes each
 * trajectory where it was instead of sampling its finished turns again.
 */
export async function searchRollout(
  ctx: RecipeContext,
  spec: {
    role: string;
    call: string;
    messages: ChatMessage[];
    seed: number;
    temperature: number;
    finalTag: 'question' | 'answer';
    /** The plan unit and the trajectory's name within it (e.g. `proposer`, `solver-3`). */
    checkpoint: { unit: number; name: string };
  },
): Promise<StoredTrajectory> {
  const { finalTag, ...rest } = spec;
  const trajectory = await searchInStage(ctx, {
    ...rest,
    ...searchSettings(ctx.config),
    finalTags: [finalTag],
  });
  return storedTrajectory(trajectory);
}

/**
 * What the stages keep of a trajectory: the completion and its loss mask for the trainer, the queries for
 * the rule filter, and the contents of the `<information>` blocks that answered searches with results (not
 * error notices) for RAG verification.
 */
function storedTrajectory(t: Trajectory): StoredTrajectory {
  return {
    completion: t.completion,
    lossMaskSpans: t.lossMaskSpans,
    searches: t.searches,
    information: t.turns.flatMap((turn) =>
      turn.answeredWith === 'results' && turn.observation ? tagContents(turn.observation, 'information') : [],
    ),
    stop: t.stop,
    ...trajectoryTokenFields(t),
  };
}
