import { alignUnits, type UnitRecords } from '../align';
import type { FilterContext, FilterOutput, ShardRecords } from '../types';
import type { TrainingRow } from '../../clients/trainer-contract';
import type { TokenFields } from '../../clients/sampled-tokens';
import { mean, meanRewardByRole, rowsByRole, zeroAdvantageFraction } from '../role-stats';
import { nextState, readState } from './pool';
import { proposerAdvantage, proposerReward, solverAdvantages, successRate } from './rewards';
import {
  PROPOSER,
  SOLVER,
  type PoolProblem,
  type SspGated,
  type SspJudged,
  type SspProposal,
  type SspSolved,
  type SspState,
  type SspUnit,
  type StoredTrajectory,
} from './records';

type SspShard = ShardRecords<SspProposal, SspGated, SspSolved, SspJudged, SspUnit>;

type Item = UnitRecords<SspProposal, SspGated, SspSolved, SspJudged, SspUnit>;

/** Why a slot is invalid, or undefined for a valid question: the rule's reason, or the verification's. */
function invalidReason({ gate, solve }: Pick<Item, 'gate' | 'solve'>): string | undefined {
  if (!gate.rule.passed) return `rule:${gate.rule.reason}`;
  const v = solve.verification;
  if (v && !v.passed) return `rag:${v.failure ?? 'wrong_answer'}`;
  return undefined;
}

/**
 * Steps 9–10 and the pool update (ssp.md §1–§2), deterministic in the stage records:
 * - one proposer row per answer: R = 1 − solver success rate for a valid question, 0 for an invalid one,
 *   advantage = R (REINFORCE without baseline, Eq. 5);
 * - one solver group of n per slot that has a problem (its own verified question, or a replay problem for
 *   an invalid slot), advantages per `ssp.solverAdvantage`;
 * - every row carries its trajectory's loss-mask spans, so retrieved text is never trained on;
 * - the next replay pool: this iteration's own verified problems added, or empty after a reset boundary.
 * The proposer's rows come first, as the code updates the proposer before the solver.
 */
export function filterSsp(ctx: FilterContext<SspState>, shards: SspShard[]): FilterOutput<SspState> {
  const { config, iteration } = ctx;
  const p = config.ssp;
  const items = alignUnits(shards);
  const proposerRows: TrainingRow[] = [];
  const solverRows: TrainingRow[] = [];
  const added: PoolProblem[] = [];
  const reasons = items.map((item) => invalidReason(item));
  for (const [k, item] of items.entries()) {
    const { plan, propose, solve, judge } = item;
    const rewards = judge.answers.map((a) => a.reward);
    if (solve.problem && rewards.length !== config.groupSize)
      throw new Error(
        `item ${plan.docIndex}: ${rewards.length} judged answers, expected ${config.groupSize}`,
      );
    const valid = reasons[k] === undefined && solve.source === 'own';
    const reward = proposerReward(valid, rewards);
    proposerRows.push({
      messages: propose.messages,
      completion: propose.trajectory.completion,
      lossMaskSpans: propose.trajectory.lossMaskSpans,
      ...storedTokenFields(propose.trajectory),
      role: PROPOSER,
      group: `${PROPOSER}/a-${plan.docIndex}`,
      reward,
      advantage: proposerAdvantage(reward),
    });
    if (valid && solve.problem)
      added.push({ ...solve.problem, successRate: successRate(rewards), iteration });
    if (!solve.problem || !solve.messages) continue;
    const advantages = solverAdvantages(p.solverAdvantage, rewards);
    solve.trajectories.forEach((t, j) =>
      solverRows.push({
        messages: solve.messages ?? [],
        completion: t.completion,
        lossMaskSpans: t.lossMaskSpans,
        ...storedTokenFields(t),
        role: SOLVER,
        group: `${SOLVER}/q-${plan.docIndex}`,
        reward: rewards[j] ?? 0,
        advantage: advantages[j] ?? 0,
      }),
    );
  }
  const rows = [...proposerRows, ...solverRows];
  const state = nextState(readState(ctx.state), iteration, added, p.replay);
  return { rows, state, metrics: metricsOf(items, reasons, rows, state, config.groupSize) };
}

function metricsOf(
  items: readonly Item[],
  /** `invalidReason` of each item, in the same order. */
  reasons: readonly (string | undefined)[],
  rows: readonly TrainingRow[],
  state: SspState,
  g: number,
): FilterOutput['metrics'] {
  const invalidReasons: Record<string, number> = {};
  const histogram = new Array<number>(g + 1).fill(0);
  let valid = 0;
  for (const [i, item] of items.entries()) {
    const reason = reasons[i];
    if (reason !== undefined) invalidReasons[reason] = (invalidReasons[reason] ?? 0) + 1;
    else if (item.solve.source === 'own') {
      valid++;
      const k = item.judge.answers.filter((a) => a.reward > 0).length;
      histogram[k] = (histogram[k] ?? 0) + 1;
    }
  }
  const count = (pred: (i: Item) => boolean): number => items.filter(pred).length;
  const solverTrajectories = items.flatMap((i) => i.solve.trajectories);
  return {
    documents: items.length,
    validTaskRate: items.length ? valid / items.length : 0,
    invalidReasons,
    passRateHistogram: histogram,
    zeroAdvantageFraction: zeroAdvantageFraction(rows),
    meanRewardByRole: meanRewardByRole(rows),
    rowsByRole: rowsByRole(rows),
    extra: {
      ruleValid: count((i) => i.gate.rule.passed),
      ragVerified: count((i) => i.solve.verification?.passed === true),
      ragErrors: count((i) => i.solve.verification?.failure === 'error'),
      ragUnparseable: count((i) => i.solve.verification?.failure === 'unparseable'),
      replayFilled: count((i) => i.solve.source === 'replay'),
      emptySlots: count((i) => i.solve.source === 'none'),
      poolSize: state.pool.length,
      meanProposerSearches: mean(items.map((i) => i.propose.trajectory.searches.length)),
      meanSolverSearches: mean(solverTrajectories.map((t) => t.searches.length)),
      meanSolverChars: mean(solverTrajectories.map((t) => [...t.completion].length)),
    },
  };
}

/** A stored trajectory's token fields, when it has them (trajectories stored without ids fall back to text). */
function storedTokenFields({
  completionTokens,
  behaviourLogprobs,
  temperature,
  topP,
}: StoredTrajectory): TokenFields {
  return {
    ...(completionTokens ? { completionTokens } : {}),
    ...(behaviourLogprobs ? { behaviourLogprobs } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(topP !== undefined ? { topP } : {}),
  };
}
