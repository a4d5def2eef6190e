import type { LlmCaller } from '../clients/inference';
import { EVAL_CALLS } from '../clients/llm-protocol';
import { seedOf } from '../lib/rng';
import type { AnswerChecker } from '../scoring/answer-checker-pool';
import { tagContents } from '../scoring/tags';
import { runSearchLoop } from '../tools/search-loop';
import type { Retriever, SearchLoopSpec, SolverSearch, Trajectory } from '../tools/types';
import { judgeAnswer, type GoldAnswer, type SampleVerdict } from './scoring';

/**
 * Agentic evaluation (`evaluation.rollout: "search"`): each sample of a benchmark item is the recipe solver's
 * search rollout on its question, the loop its solve stage runs (the search tool on the run's index, the
 * turn and token budgets), judged on the final `<answer>` by the same answer checker as any benchmark. A
 * trajectory is not checkpointed turn by turn: the item is stored once all its samples are judged, so a
 * retried evaluation samples only the items it had not finished.
 */

/** A sample of an agentic item: its verdict, the trajectory's text and how it searched. */
export interface SearchSample extends SampleVerdict {
  completion: string;
  finishReason: string;
  /** Assistant turns, searches included. */
  turns: number;
  /** The valid queries it issued, in order. */
  searches: string[];
  stop: Trajectory['stop'];
}

/** What the run's settings fix for every trajectory of an evaluation. */
export type SearchSettings = Pick<
  SearchLoopSpec,
  'role' | 'temperature' | 'topP' | 'maxTokens' | 'topK' | 'passageTokens' | 'responseTokens' | 'signal'
> & { llm: LlmCaller; retriever: Retriever; check: AnswerChecker };

/** The answer a trajectory ends with: the last `<answer>` of its final turn; none when it did not finish. */
export function finalAnswer(trajectory: Trajectory): string | null {
  if (trajectory.stop !== 'final') return null;
  const answers = tagContents(trajectory.turns.at(-1)?.text ?? '', 'answer');
  return answers.at(-1)?.trim() ?? null;
}

/** `n` search rollouts on one item (each seeded by `seed` and its index), each judged against `gold`. */
export async function searchSamples(
  settings: SearchSettings,
  search: SolverSearch,
  gold: GoldAnswer,
  n: number,
  seed: number,
): Promise<SearchSample[]> {
  const { check, ...loop } = settings;
  return Promise.all(
    Array.from({ length: n }, async (_, j) => {
      const trajectory = await runSearchLoop({
        ...loop,
        ...search,
        call: EVAL_CALLS.search,
        seed: seedOf(seed, 'search', j),
      });
      return {
        ...(await judgeAnswer(gold, finalAnswer(trajectory), check)),
        completion: trajectory.completion,
        finishReason: trajectory.turns.at(-1)?.finishReason ?? 'none',
        turns: trajectory.turns.length,
        searches: trajectory.searches,
        stop: trajectory.stop,
      };
    }),
  );
}

/** Mean valid searches per sample over the items (what the report plots beside accuracy). */
export function searchesPerAnswer(
  items: ReadonlyArray<{ samples: ReadonlyArray<{ searches?: string[] }> }>,
): number {
  const counts = items.flatMap((item) => item.samples.map((s) => s.searches?.length ?? 0));
  return counts.length ? counts.reduce((a, b) => a + b, 0) / counts.length : 0;
}
