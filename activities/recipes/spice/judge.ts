import { extractLastBoxed } from '../../scoring/boxed';
import type { AnswerChecker } from '../../scoring/answer-checker-pool';
import type { SpiceGated, SpiceJudged, SpiceSolved } from './records';

/**
 * Rule verification (§2.2): the last `\boxed{}` of each answer against the Challenger's gold answer, by the
 * task's answer kind, each check in the answer-checker pool under its time limit (a timeout is wrong). An
 * answer without `\boxed{}` is simply wrong; SPICE has no separate format reward.
 */
export async function judgeSpice(
  gated: SpiceGated,
  solved: SpiceSolved | undefined,
  check: AnswerChecker,
): Promise<SpiceJudged> {
  if (!solved)
    throw new Error(`solve output has no record for unit ${gated.unit} (document ${gated.docIndex})`);
  const tasks = solved.answers.map(async ({ trajectory, completions }) => {
    const verdict = gated.verdicts[trajectory];
    if (!verdict?.valid)
      throw new Error(
        `document ${gated.docIndex}: trajectory ${trajectory} was solved but did not pass the gate`,
      );
    const extracted = completions.map((c) => extractLastBoxed(c) ?? null);
    const { answerKind: kind, answer: gold } = verdict.task;
    const correct = await Promise.all(
      extracted.map(async (predicted) => {
        if (predicted === null) return false;
        return (await check({ kind, predicted, gold })).verdict === 'equivalent';
      }),
    );
    return { trajectory, correct, extracted };
  });
  return { unit: gated.unit, docIndex: gated.docIndex, tasks: await Promise.all(tasks) };
}
