import { alignUnits, type UnitRecords } from '../align';
import type { FilterContext, FilterOutput, ShardRecords } from '../types';
import type { RunConfig } from '../../../config/schema';
import type { TrainingRow } from '../../clients/trainer-contract';
import { sampledFields } from '../../clients/sampled-tokens';
import { computeAdvantages } from '../../scoring/advantages';
import { formatReward } from '../../scoring/tags';
import type { JudgeScore } from '../../judges/score';
import { mean, meanRewardByRole, rowsByRole, zeroAdvantageFraction } from '../role-stats';
import { answerForJudge } from './parse';
import { currentPools, growPools } from './pools';
import { judgeReward, meanSolveScore, proposerReward, solverReward } from './rewards';
import {
  JUDGE,
  PROPOSER,
  SOLVER,
  type Generation,
  type MaeGated,
  type MaeJudged,
  type MaePlanUnit,
  type MaeProposal,
  type MaeSolved,
  type MaeState,
  type QaPair,
} from './records';

type MaeShard = ShardRecords<MaeProposal, MaeGated, MaeSolved, MaeJudged, MaePlanUnit>;

/** One unit's records from every stage. */
export type MaeUnitRecords = UnitRecords<MaeProposal, MaeGated, MaeSolved, MaeJudged, MaePlanUnit>;

const ROLES = [PROPOSER, SOLVER, JUDGE] as const;
type Role = (typeof ROLES)[number];
type Row = Omit<TrainingRow, 'advantage'>;

/** Steps 3–7 over every shard, from the pools the iteration started with. */
export async function filterMae(
  ctx: FilterContext<MaeState>,
  shards: MaeShard[],
): Promise<FilterOutput<MaeState>> {
  return filterMaeUnits(ctx.config, await currentPools(ctx.config.mae, ctx.state), alignUnits(shards));
}

/**
 * Rewards (§2.3), advantages and the next pools:
 * - Proposer: ⅓ quality + ⅓ (1 − R̄_S) + ⅓ format, 0 when no question was extracted;
 * - Solver: ½ V_J + ½ format, for the answer to the question drawn from D;
 * - Judge: format only, for the evaluation of the pair drawn from P;
 * - advantages per role over the batch (Task-Relative REINFORCE++ with `reinforce_pp`: each role's batch
 *   is one group), rows of frozen roles left out;
 * - D gains the accepted questions, P every trained (question, answer) pair, unfiltered.
 */
export function filterMaeUnits(
  config: RunConfig,
  pools: MaeState,
  units: readonly MaeUnitRecords[],
): FilterOutput<MaeState> {
  const params = config.mae;
  const byRole: Record<Role, Row[]> = { proposer: [], solver: [], judge: [] };
  const formats: Record<Role, number[]> = { proposer: [], solver: [], judge: [] };
  const scores: Record<'quality' | 'difficulty' | 'solver', JudgeScore[]> = {
    quality: [],
    difficulty: [],
    solver: [],
  };
  const solveMeans: number[] = [];
  const invalidReasons: Record<string, number> = {};
  const accepted: string[] = [];
  const pairs: QaPair[] = [];
  let truncated = 0;

  const row = (role: Role, generation: Generation, format: number, reward: number): void => {
    formats[role].push(format);
    if (generation.finishReason === 'length') truncated++;
    byRole[role].push({
      messages: generation.messages,
      completion: generation.completion,
      role,
      group: role,
      reward,
      ...sampledFields(generation.sampled),
    });
  };

  for (const { propose, gate, solve, judge } of units) {
    // Proposer (steps 1–4).
    const proposerFormat = formatReward(propose.proposer.completion, 'question');
    if (gate.rejected) invalidReasons[gate.rejected] = (invalidReasons[gate.rejected] ?? 0) + 1;
    if (gate.accepted && gate.question !== undefined) accepted.push(gate.question);
    const solveScores = judge.difficultyScores?.map((s) => s.value);
    if (propose.quality) scores.quality.push(propose.quality);
    if (judge.difficultyScores) scores.difficulty.push(...judge.difficultyScores);
    if (solveScores) solveMeans.push(meanSolveScore(solveScores));
    const reward = proposerReward(
      params,
      gate.question === undefined || !propose.quality
        ? { question: false, format: proposerFormat }
        : {
            question: true,
            format: proposerFormat,
            quality: propose.quality.value,
            accepted: gate.accepted,
            ...(solveScores ? { solveScores } : {}),
          },
    );
    row(PROPOSER, propose.proposer, proposerFormat, reward);

    // Solver (step 5).
    const solverFormat = formatReward(solve.solver.completion, 'answer');
    scores.solver.push(judge.solverScore);
    row(SOLVER, solve.solver, solverFormat, solverReward(params, judge.solverScore.value, solverFormat));
    pairs.push({ question: gate.solverQuestion, answer: answerForJudge(solve.solver.completion) });

    // Judge (step 6).
    if (judge.judge) {
      const judgeFormat = formatReward(judge.judge.completion, 'score');
      row(JUDGE, judge.judge, judgeFormat, judgeReward(params, judgeFormat));
    }
  }

  const trained = ROLES.filter((role) => params.trainRoles[role]);
  const rows = trained.flatMap((role) => withAdvantages(config, byRole[role]));
  const growth = growPools(pools, accepted, pairs, params);
  const allScores = [...scores.quality, ...scores.difficulty, ...scores.solver];
  return {
    rows,
    state: growth.state,
    metrics: {
      documents: units.length,
      validTaskRate: units.length ? accepted.length / units.length : 0,
      invalidReasons,
      passRateHistogram: [],
      zeroAdvantageFraction: zeroAdvantageFraction(rows),
      meanRewardByRole: meanRewardByRole(rows),
      rowsByRole: rowsByRole(rows),
      extra: {
        'pool.questions': growth.state.questions.length,
        'pool.seeds': growth.state.seedCount,
        'pool.added': growth.added,
        'pool.rejected': invalidReasons.below_threshold ?? 0,
        'pool.excluded': invalidReasons.excluded ?? 0,
        'pool.duplicates': growth.duplicates,
        'pool.overCap': growth.overCap,
        'pool.pairs': growth.state.pairs.length,
        'pool.pairsAdded': pairs.length,
        'pool.pairsDropped': growth.pairsDropped,
        'proposer.withReference': units.filter((u) => u.plan.reference !== undefined).length,
        'proposer.questions': scores.quality.length,
        'quality.mean': mean(scores.quality.map((s) => s.value)),
        'solveScore.mean': mean(solveMeans),
        'format.proposer': mean(formats.proposer),
        'format.solver': mean(formats.solver),
        'format.judge': mean(formats.judge),
        'judge.unitsWithoutPair': units.filter((u) => !u.judge.judge).length,
        'fallback.quality': fallbacks(scores.quality),
        'fallback.difficulty': fallbacks(scores.difficulty),
        'fallback.solver': fallbacks(scores.solver),
        'fallback.rate': allScores.length ? fallbacks(allScores) / allScores.length : 0,
        truncated,
        ...scoreHistogram(allScores),
      },
    },
  };
}

/** One group per role: the role's whole batch, so `reinforce_pp` whitens each role separately (§2.4). */
function withAdvantages(config: RunConfig, rows: readonly Row[]): TrainingRow[] {
  const [advantages = []] = computeAdvantages(config.training.estimator, [rows.map((r) => r.reward)]);
  return rows.map((r, i) => ({ ...r, advantage: advantages[i] ?? 0 }));
}

const fallbacks = (scores: readonly JudgeScore[]): number => scores.filter((s) => s.fallback).length;

/** The judge-score histogram (failure mode 5: a pile-up at 10 is leniency, fallbacks are parse failures). */
function scoreHistogram(scores: readonly JudgeScore[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (let x = 1; x <= 10; x++) out[`judgeScore.${x}`] = 0;
  for (const s of scores) {
    if (s.x === undefined) continue;
    const key = `judgeScore.${Math.min(10, Math.max(1, Math.round(s.x)))}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}
