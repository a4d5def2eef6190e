import type { PlanContext } from '../types';
import type { RunConfig } from '../../../config/schema';
import { seededRng } from '../../lib/rng';
import { NON_RETRYABLE, nonRetryable } from '../../lib/errors';
import { currentPools } from './pools';
import { JUDGE, type MaePlanUnit, type MaeState } from './records';

/**
 * B units from the pools the previous iteration committed (spec §1): each carries one proposer prompt's
 * reference (q_ref drawn from D with probability p_ref, else none), one Solver question drawn uniformly
 * from D (seeds and added questions alike) and one Judge pair drawn uniformly from P. While P is empty
 * (the first iteration) no unit has a Judge pair, so that iteration trains no Judge samples. Seeded by
 * (seed, iteration): a retried plan draws the same units.
 */
export async function planMae(
  ctx: PlanContext<MaeState>,
): Promise<Array<Omit<MaePlanUnit, 'unit' | 'docIndex'>>> {
  const { config, iteration } = ctx;
  assertJudgeIsPolicy(config);
  const { questions, pairs } = await currentPools(config.mae, ctx.state);
  const rng = seededRng(config.seed, iteration, 'mae-plan');
  const trainJudge = config.mae.trainRoles.judge && pairs.length > 0;
  return Array.from({ length: config.batchSize }, () => {
    const reference = rng.next() < config.mae.referenceRatio ? rng.pick(questions) : undefined;
    const solverQuestion = rng.pick(questions);
    const judgePair = trainJudge ? rng.pick(pairs) : undefined;
    return {
      ...(reference !== undefined ? { reference } : {}),
      solverQuestion,
      ...(judgePair ? { judgePair } : {}),
    };
  });
}

/**
 * A separate judge model (`inference.roles.judge` with its own URL or model) may score, but it is not the
 * policy: training the Judge role on its evaluations would teach the policy another model's text. Such a
 * run must freeze the Judge (`mae.trainRoles.judge: false`, the paper's "no judge training" ablation).
 */
function assertJudgeIsPolicy(config: RunConfig): void {
  const judge = config.inference.roles[JUDGE];
  if (config.mae.trainRoles.judge && (judge?.baseUrl !== undefined || judge?.model !== undefined)) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      'inference.roles.judge names a separate judge model, which cannot be the trained Judge: ' +
        'set mae.trainRoles.judge to false, or remove inference.roles.judge to let the policy judge',
    );
  }
}
