import type { RecipeContext } from '../types';
import { SSP_CALLS } from '../../clients/llm-protocol';
import { seedOf } from '../../lib/rng';
import { judgeCorrectness } from './correctness';
import { answerTagCount, extractFinalAnswer, modelText } from './parse';
import { solverReward } from './rewards';
import { JUDGE, type JudgedAnswer, type SspGated, type SspJudged, type SspSolved } from './records';

/**
 * Step 8 (ssp.md §1, §2): each solver trajectory's last `<answer>` against the ground truth, normalised EM
 * first and the judge for the rest (role `judge`: the policy unless `inference.roles.judge` names another
 * model). Only the model's own text is read: an `<answer>` inside a retrieved document is not the solver's.
 * A failed judge request fails the unit (and is retried), it never decides a reward.
 */
export async function judgeSsp(
  ctx: RecipeContext,
  gated: SspGated,
  solved: SspSolved | undefined,
): Promise<SspJudged> {
  if (!solved) throw new Error(`solve output has no record for unit ${gated.unit} (item ${gated.docIndex})`);
  const { config, iteration } = ctx;
  const problem = solved.problem;
  const head = { unit: gated.unit, docIndex: gated.docIndex };
  if (!problem) return { ...head, answers: [] };
  const llm = ctx.llm(JUDGE);
  const answers = await Promise.all(
    solved.trajectories.map(async (trajectory, j): Promise<JudgedAnswer> => {
      const text = modelText(trajectory);
      const answer = extractFinalAnswer(text);
      const answerTags = answerTagCount(text);
      if (answer === null) return { answer, exactMatch: false, answerTags, reward: 0 };
      const c = await judgeCorrectness(problem.question, answer, problem.answer, {
        llm,
        call: SSP_CALLS.judge,
        seed: seedOf(config.seed, iteration, 'judge', gated.docIndex, j),
        sampling: config.ssp.judge,
        signal: ctx.signal,
      });
      return {
        answer,
        exactMatch: c.exactMatch,
        ...(c.judge ? { judge: c.judge } : {}),
        answerTags,
        reward: solverReward(c.correct, answerTags, config.ssp),
      };
    }),
  );
  return { ...head, answers };
}
