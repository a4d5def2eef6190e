import type { RecipeContext } from '../types';
import { MAE_CALLS } from '../../clients/llm-protocol';
import { generate, generationOf } from './calls';
import { needsDifficulty } from './gate';
import { solverMessages } from './prompts';
import { SOLVER, type MaeGated, type MaeSolved } from './records';

/**
 * Steps 2b and 5 for one unit, both with L1: N_sample (= groupSize) Solver answers to the proposed question,
 * which only measure its difficulty, and the one trained Solver answer to the unit's question from D.
 */
export async function solveMae(ctx: RecipeContext, gated: MaeGated): Promise<MaeSolved> {
  const answer = async (question: string, n: number, what: string) => {
    const messages = solverMessages(question);
    const samples = await generate(ctx, SOLVER, MAE_CALLS.solver, messages, n, what, gated.docIndex);
    return { question, messages, samples };
  };
  const [difficulty, trained] = await Promise.all([
    needsDifficulty(ctx.config.mae, gated)
      ? answer(gated.question, ctx.config.groupSize, 'mae-difficulty')
      : undefined,
    answer(gated.solverQuestion, 1, 'mae-solve'),
  ]);
  const [sample] = trained.samples;
  return {
    unit: gated.unit,
    docIndex: gated.docIndex,
    ...(difficulty
      ? {
          difficulty: {
            question: difficulty.question,
            messages: difficulty.messages,
            completions: difficulty.samples.map((s) => s.content),
          },
        }
      : {}),
    solver: generationOf(trained.messages, sample),
  };
}
