/**
 * MAE's toy world, per iteration (a `PointReader` for `readLearningCurve`): how well the Judge judged, which
 * rungs the Proposer wrote, and how often the Solver was right, each scored against the world's arithmetic,
 * which the run itself never consults.
 */
import type { JudgeScore } from '../../activities/judges/score';
import { answerForJudge, extractQuestion } from '../../activities/recipes/mae/parse';
import {
  JUDGE,
  PROPOSER,
  SOLVER,
  type MaeGated,
  type MaeJudged,
  type MaeSolved,
} from '../../activities/recipes/mae/records';
import { agreement, mean, stageRecords, type Agreement, type PointReader } from './learning';
import { answerOf, isRightAnswer } from './mae-world';
import { isHeldOutFact, rungOf, type Rung } from './world';

export interface MaePoint {
  /**
   * The Judge's agreement (a score above 0.5 passes the answer; one that did not parse never agrees) on every
   * (question, answer) pair it scored in the iteration: the Solver's answers
   * to the Proposer's new questions (reward-only) and its trained answers to questions of D.
   */
  judgeAgreement: Agreement;
  /**
   * On the pairs about held-out facts: the Solver's answers to proposed questions of held-out facts, which
   * never enter D, so neither the Solver nor the Judge ever trains on one.
   */
  heldOutJudgeAgreement: Agreement;
  /** Shares of the rungs among the Proposer's questions of the ladder. */
  rungShares: Partial<Record<Rung, number>>;
  /** Share of the Proposer's completions that are a question of the ladder. */
  ladderShare: number;
  /** The Solver's trained answers (to questions of D) that are right, by rung and overall. */
  solverAccuracy: number;
  solverAccuracyByRung: Partial<Record<Rung, number>>;
  /** The Judge's trained rows (evaluations of pairs from P). */
  judgeRows: number;
}

export const maePoint: PointReader<MaePoint> = async ({ store, runId, iteration, rows }) => {
  const [gated, solved, judged] = await Promise.all([
    stageRecords<MaeGated>(store, runId, iteration, 'gate'),
    stageRecords<MaeSolved>(store, runId, iteration, 'solve'),
    stageRecords<MaeJudged>(store, runId, iteration, 'judge'),
  ]);
  const solvedByUnit = new Map(solved.map((s) => [s.unit, s]));
  const judgedByUnit = new Map(judged.map((j) => [j.unit, j]));
  const verdicts: Array<{ question: string; agrees: boolean }> = [];
  const judge = (question: string, completion: string, score: JudgeScore | undefined): void => {
    if (answerOf(question) === undefined || score === undefined) return;
    const right = isRightAnswer(question, answerForJudge(completion));
    verdicts.push({ question, agrees: score.fallback === undefined && score.value > 0.5 === right });
  };
  for (const gate of gated) {
    const solve = solvedByUnit.get(gate.unit);
    const judgement = judgedByUnit.get(gate.unit);
    if (!solve || !judgement) continue;
    solve.difficulty?.completions.forEach((c, i) =>
      judge(solve.difficulty?.question ?? '', c, judgement.difficultyScores?.[i]),
    );
    judge(gate.solverQuestion, solve.solver.completion, judgement.solverScore);
  }

  const proposed = rows.filter((r) => r.role === PROPOSER).map((r) => questionOf(r.completion));
  const rungs = proposed.flatMap((q) => {
    const rung = q === undefined ? undefined : rungOf(q);
    return rung ? [rung] : [];
  });
  const answers = rows
    .filter((r) => r.role === SOLVER)
    .map((r) => {
      const question = /### Task:\n([\s\S]*)$/.exec(r.messages.at(-1)?.content ?? '')?.[1] ?? '';
      return { rung: rungOf(question), right: isRightAnswer(question, answerForJudge(r.completion)) };
    });
  return {
    judgeAgreement: agreement(verdicts),
    heldOutJudgeAgreement: agreement(verdicts.filter((v) => isHeldOutQuestion(v.question))),
    rungShares: shares(rungs),
    ladderShare: proposed.length ? rungs.length / proposed.length : 0,
    solverAccuracy: mean(answers.map((a) => Number(a.right))),
    solverAccuracyByRung: Object.fromEntries(
      [...new Set(answers.flatMap((a) => (a.rung ? [a.rung] : [])))].map((rung) => [
        rung,
        mean(answers.filter((a) => a.rung === rung).map((a) => Number(a.right))),
      ]),
    ),
    judgeRows: rows.filter((r) => r.role === JUDGE).length,
  };
};

function questionOf(completion: string): string | undefined {
  const extracted = extractQuestion(completion);
  return extracted.ok ? extracted.question : undefined;
}

/** Whether a question of the ladder is about a held-out fact. */
function isHeldOutQuestion(question: string): boolean {
  const match = /What is (\d{2}) ([+-]) (\d)\?/.exec(question);
  if (!match) return false;
  const [a, b] = [Number(match[1]), Number(match[3])];
  return match[2] === '+' ? isHeldOutFact(a, b) : isHeldOutFact(a - b, b);
}

function shares(rungs: readonly Rung[]): Partial<Record<Rung, number>> {
  const out: Partial<Record<Rung, number>> = {};
  for (const rung of rungs) out[rung] = (out[rung] ?? 0) + 1 / rungs.length;
  return out;
}
