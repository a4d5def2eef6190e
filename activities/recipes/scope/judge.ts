import type { RecipeContext } from '../types';
import type { Trajectory } from '../../tools/types';
import { SCOPE_CALLS } from '../../clients/llm-protocol';
import { seedOf } from '../../lib/rng';
import { askBinaryJudge, type BinaryScore } from '../../judges/binary';
import { extractAnswer } from './parse';
import { graderMessages } from './prompts';
import { meanGrade } from './rewards';
import { isSolverStep } from './schedule';
import { selectTask } from './select';
import { solverTrajectory } from './solve';
import {
  JUDGE,
  type GatedCandidate,
  type GradedRollout,
  type ScopeGated,
  type ScopeJudged,
  type ScopeSolved,
  type SolverTraining,
} from './records';

/**
 * The judge stage (scope.md §1 step 5, §4 Grader): every Solver rollout of every valid task is graded by the
 * frozen judge against each rubric in its own call, 0 or 1. The grader sees the extracted `<answer>` (the
 * response is [U]; the whole trajectory would let retrieved text, which the Solver did not write, earn
 * credit); a rollout without an answer scores 0 without a call. Unparseable verdicts are 0 and counted.
 * In a Solver step (stage 2, steps 2–5) the graded rollouts are the N_filter that select the task; a task
 * kept (ḡ in the band) then gets G fresh Solver rollouts, graded here too, to train on, so a task that is
 * not kept costs no training rollouts.
 */
export async function judgeScope(
  ctx: RecipeContext,
  gated: ScopeGated,
  solved: ScopeSolved | undefined,
): Promise<ScopeJudged> {
  if (!solved)
    throw new Error(`solve output has no record for unit ${gated.unit} (document ${gated.docIndex})`);
  const selecting = isSolverStep(ctx.config, ctx.iteration);
  const candidates = await Promise.all(
    gated.candidates.map(async (c, k) => {
      if (c.status !== 'valid') return { rollouts: [] };
      const trajectories = solved.candidates[k]?.trajectories ?? [];
      const rollouts = await gradeAll(ctx, gated, c, k, trajectories, 0);
      if (!selecting) return { rollouts };
      if (selectTask([meanGrade(rollouts)], ctx.config.scope.taskSelection) === undefined)
        return { rollouts };
      return { rollouts, training: await trainingRollouts(ctx, gated, c, k, rollouts.length) };
    }),
  );
  return { unit: gated.unit, docIndex: gated.docIndex, candidates };
}

/** G fresh rollouts of a kept task and their grades; grading seeds go on after the selection rollouts'. */
async function trainingRollouts(
  ctx: RecipeContext,
  gated: ScopeGated,
  c: GatedCandidate,
  k: number,
  graded: number,
): Promise<SolverTraining> {
  const messages = c.solverMessages ?? [];
  const trajectories = await Promise.all(
    Array.from({ length: ctx.config.groupSize }, (_, j) =>
      solverTrajectory(ctx, gated, messages, `solver-train-${k}-${j}`, ['train', k, j]),
    ),
  );
  return { trajectories, rollouts: await gradeAll(ctx, gated, c, k, trajectories, graded) };
}

/** Each trajectory's answer graded against every rubric; rollout j's grading seeds use index `first + j`. */
function gradeAll(
  ctx: RecipeContext,
  gated: ScopeGated,
  c: GatedCandidate,
  k: number,
  trajectories: readonly Trajectory[],
  first: number,
): Promise<GradedRollout[]> {
  const { question, rubrics } = c;
  if (question === undefined || !rubrics) return Promise.resolve([]);
  return Promise.all(
    trajectories.map(async (t, j): Promise<GradedRollout> => {
      const answer = extractAnswer(t.turns.at(-1)?.text ?? '');
      if (answer === null) return { answer, grades: [] };
      const grades = await Promise.all(
        rubrics.map((rubric, r) => grade(ctx, question, answer, rubric, gated.docIndex, k, first + j, r)),
      );
      return { answer, grades };
    }),
  );
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
