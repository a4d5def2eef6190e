import { extractLastBoxed } from '../../scoring/boxed';
import { verifyAnswer } from '../../scoring/verifiers';
import type { SpiceGated, SpiceJudged, SpiceSolved } from './records';

/**
 * Rule verification (§2.2): the last `\boxed{}` of each answer against the Challenger's gold answer, by the
 * task's answer kind. An answer without `\boxed{}` is simply wrong; SPICE has no separate format reward.
 */
export function judgeSpice(gated: SpiceGated, solved: SpiceSolved | undefined): SpiceJudged {
  if (!solved)
    throw new Error(`solve output has no record for unit ${gated.unit} (document ${gated.docIndex})`);
  const tasks = solved.answers.map(({ trajectory, completions }) => {
    const verdict = gated.verdicts[trajectory];
    if (!verdict?.valid)
      throw new Error(
        `document ${gated.docIndex}: trajectory ${trajectory} was solved but did not pass the gate`,
      );
    const extracted = completions.map((c) => extractLastBoxed(c) ?? null);
    const correct = extracted.map(
      (e) => e !== null && verifyAnswer(verdict.task.answerKind, e, verdict.task.answer),
    );
    return { trajectory, correct, extracted };
  });
  return { unit: gated.unit, docIndex: gated.docIndex, tasks };
}
