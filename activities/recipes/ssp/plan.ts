import type { PlanContext } from '../types';
import { seededRng } from '../../lib/rng';
import { NON_RETRYABLE, nonRetryable } from '../../lib/errors';
import { loadAnswers } from './answers';
import { readState } from './pool';
import type { SspAnswer, SspState, SspUnit } from './records';

type Planned = Omit<SspUnit, 'unit' | 'docIndex'>;

/**
 * Step 1 (ssp.md §1.1): B answers from D. D is walked in epochs, each a permutation seeded by (seed,
 * epoch), and iteration k takes positions (k−1)·B … k·B−1 of that walk: no answer repeats within an epoch
 * (50k answers / 256 ≈ 195 steps is one epoch, the paper's 150–200 steps), and a retried plan or a run
 * resumed from any commit plans the same answers without any state.
 */
export async function planSsp(ctx: PlanContext<SspState>): Promise<Planned[]> {
  const { config, iteration } = ctx;
  if (config.training.estimator !== 'grpo') {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `training.estimator: SSP's advantages are fixed per role by the paper (GRPO solver, REINFORCE ` +
        `proposer; ssp.solverAdvantage picks the solver's variant); set "grpo" (got "${config.training.estimator}")`,
    );
  }
  if (!config.retrieval.index) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      'retrieval.index: SSP searches a built index; build one with `npx selfplay index build --corpus ' +
        'CORPUS --out DIR_OR_S3` and set retrieval.index to it',
    );
  }
  readState(ctx.state); // a state of another recipe fails here, before any sampling
  const answers = await loadAnswers(config.ssp);
  return answerWalk(answers, config.seed, iteration, config.batchSize);
}

/** The B answers of iteration k (from 1) in the seeded epoch walk over D. */
export function answerWalk(
  answers: readonly SspAnswer[],
  seed: number,
  iteration: number,
  batchSize: number,
): SspAnswer[] {
  const n = answers.length;
  const epochs = new Map<number, number[]>();
  const order = (epoch: number): number[] => {
    let perm = epochs.get(epoch);
    if (!perm) {
      perm = seededRng(seed, 'ssp-answers', epoch).shuffle([...answers.keys()]);
      epochs.set(epoch, perm);
    }
    return perm;
  };
  return Array.from({ length: batchSize }, (_, i) => {
    const position = (iteration - 1) * batchSize + i;
    const index = order(Math.floor(position / n))[position % n] as number;
    return { ...(answers[index] as SspAnswer) };
  });
}
