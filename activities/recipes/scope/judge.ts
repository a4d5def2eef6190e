import type { RecipeContext } from '../types';
import { SCOPE_CALLS } from '../../clients/llm-protocol';
import { seedOf } from '../../lib/rng';
import { askBinaryJudge, type BinaryScore } from '../../judges/binary';
import { extractAnswer } from './parse';
import { graderMessages } from './prompts';
import { JUDGE, type GradedRollout, type ScopeGated, type ScopeJudged, type ScopeSolved } from './records';

/**
 * The judge stage (scope.md §1 step 5, §4 Grader): every Solver rollout of every valid task is graded by the
 * frozen judge against each rubric in its own call, 0 or 1. The grader sees the extracted `<answer>` (the
 * response is [U]; the whole trajectory would let retrieved text, which the Solver did not write, earn
 * credit); a rollout without an answer scores 0 without a call. Unparseable verdicts are 0 and counted.
 */
export async function judgeScope(
  ctx: RecipeContext,
  gated: ScopeGated,
  solved: ScopeSolved | undefined,
): Promise<ScopeJudged> {
  if (!solved)
    throw new Error(`solve output has no record for unit ${gated.unit} (document ${gated.docIndex})`);
  const candidates = await Promise.all(
    gated.candidates.map(async (c, k) => {
      const { question, rubrics } = c;
      if (c.status !== 'valid' || question === undefined || !rubrics) return { rollouts: [] };
      const trajectories = solved.candidates[k]?.trajectories ?? [];
      const rollouts = await Promise.all(
        trajectories.map(async (t, j): Promise<GradedRollout> => {
          const answer = extractAnswer(t.turns.at(-1)?.text ?? '');
          if (answer === null) return { answer, grades: [] };
          const grades = await Promise.all(
            rubrics.map((rubric, r) => grade(ctx, question, answer, rubric, gated.docIndex, k, j, r)),
          );
          return { answer, grades };
        }),
      );
      return { rollouts };
    }),
  );
  return { unit: gated.unit, docIndex: gated.docIndex, candidates };
}

function grade(
  ctx: RecipeContext,
  question: string,
  answer: string,
  rubric: string,
  ...seedParts: number[]
): Promise<BinaryScore> {
  const { config, iteration, signal } = ctx;
  const { temperature, maxTokens } = config.scope.judgeSampling.grade;
  return askBinaryJudge(ctx.llm(JUDGE), {
    role: JUDGE,
    call: SCOPE_CALLS.grade,
    messages: graderMessages(question, answer, rubric),
    seed: seedOf(config.seed, iteration, 'scope-grade', ...seedParts),
    temperature,
    topP: 1,
    maxTokens,
    signal,
  });
}
