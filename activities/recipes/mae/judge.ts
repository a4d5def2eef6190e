import type { RecipeContext } from '../types';
import { MAE_CALLS } from '../../clients/llm-protocol';
import { generate, generationOf, judgeScoreOf } from './calls';
import { answerForJudge } from './parse';
import { judgeAnswerMessages } from './prompts';
import { JUDGE, type MaeGated, type MaeJudged, type MaeSolved, type QaPair } from './records';

/**
 * Steps 2b, 5 and 6 for one unit, all with L4: the Judge scores each difficulty answer and the trained
 * Solver answer (reward-only calls), and writes the trained Judge's evaluation of the unit's pair from P.
 */
export async function judgeMae(
  ctx: RecipeContext,
  gated: MaeGated,
  solved: MaeSolved | undefined,
): Promise<MaeJudged> {
  if (!solved) throw new Error(`solve output has no record for unit ${gated.unit} (index ${gated.docIndex})`);
  const score = (question: string, completion: string, ...seed: Array<string | number>) =>
    judgeScoreOf(
      ctx,
      MAE_CALLS.judgeAnswer,
      judgeAnswerMessages(question, answerForJudge(completion)),
      ...seed,
      gated.docIndex,
    );
  const { difficulty } = solved;
  const [difficultyScores, solverScore, judge] = await Promise.all([
    difficulty
      ? Promise.all(
          difficulty.completions.map((c, i) => score(difficulty.question, c, 'mae-difficulty-judge', i)),
        )
      : undefined,
    score(gated.solverQuestion, solved.solver.completion, 'mae-solve-judge'),
    gated.judgePair ? evaluate(ctx, gated.judgePair, gated.docIndex) : undefined,
  ]);
  return {
    unit: gated.unit,
    docIndex: gated.docIndex,
    ...(difficultyScores ? { difficultyScores } : {}),
    solverScore,
    ...(judge ? { judge } : {}),
  };
}

/** The trained Judge: one L4 evaluation of a pair from P, sampled from the policy. */
async function evaluate(
  ctx: RecipeContext,
  pair: QaPair,
  docIndex: number,
): Promise<NonNullable<MaeJudged['judge']>> {
  const messages = judgeAnswerMessages(pair.question, pair.answer);
  const [sample] = await generate(ctx, JUDGE, MAE_CALLS.judgeAnswer, messages, 1, 'mae-judge', docIndex);
  return { pair, ...generationOf(messages, sample) };
}
