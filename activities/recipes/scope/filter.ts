import { alignUnits, type UnitRecords } from '../align';
import type { FilterContext, FilterOutput, ShardRecords } from '../types';
import type { TrainingRow } from '../../clients/trainer-contract';
import type { Trajectory } from '../../tools/types';
import type { RunConfig } from '../../../config/schema';
import { computeAdvantages } from '../../scoring/advantages';
import { approxTokens } from '../../scoring/tokens';
import { mean, meanRewardByRole, rowsByRole, zeroAdvantageFraction } from '../role-stats';
import {
  challengerReward,
  lengthPenalty,
  rubricScore,
  searchBonus,
  solverFormat,
  solverReward,
} from './rewards';
import { selectTask } from './select';
import {
  CHALLENGER,
  SOLVER,
  type GradedRollout,
  type ScopeGated,
  type ScopeJudged,
  type ScopeProposal,
  type ScopeSolved,
  type ScopeUnit,
} from './records';

type ScopeShard = ShardRecords<ScopeProposal, ScopeGated, ScopeSolved, ScopeJudged, ScopeUnit>;

/** One document's records across the stages. */
type Item = UnitRecords<ScopeProposal, ScopeGated, ScopeSolved, ScopeJudged, ScopeUnit>;

/** One Solver rollout's reward and its parts (Eq. 6). */
interface SolverScore {
  reward: number;
  score: number;
  answerTokens: number;
  lengthPenalty: number;
  searches: number;
}

/** A document's scores: R_C per Challenger rollout, ḡ per valid candidate, and the task kept for the Solver. */
interface Scored {
  item: Item;
  challengerRewards: number[];
  meanScores: Array<number | undefined>;
  selected?: { candidate: number; rollouts: SolverScore[] };
}

/**
 * Rewards, task selection and the batch (scope.md §1–§2); deterministic in its inputs.
 * - Challenger: G rows per document, R_C (Eq. 4) per rollout, advantages within the document's group.
 * - Solver: for the one task per document selected by ḡ, its G rollouts with R_S (Eq. 6), advantages within
 *   the group. Groups outside [0.2, 0.8] are not trained (their ḡ still rewards the Challenger).
 * Both use `training.estimator` (the preset's GRPO: (R − mean)/(std + ε)). Every row carries its
 * trajectory's `lossMaskSpans`, so retrieved text is not trained on (the Search-R1 masking, §2 [U]).
 */
export function filterScope(ctx: FilterContext, shards: ScopeShard[]): FilterOutput {
  const { config } = ctx;
  const scored = alignItems(shards).map((item) => scoreItem(item, config));
  const rows = scored.flatMap((s) => rowsOf(s, config));
  return { rows, metrics: metricsOf(scored, rows, config) };
}

/** Each document's records, with its candidates (one per Challenger rollout) aligned across stages too. */
function alignItems(shards: readonly ScopeShard[]): Item[] {
  const items = alignUnits(shards);
  for (const { plan, propose, gate, solve, judge } of items) {
    if (
      [gate.candidates, solve.candidates, judge.candidates].some(
        (c) => c.length !== propose.candidates.length,
      )
    )
      throw new Error(`document ${plan.docIndex}: candidates are misaligned across stages`);
  }
  return items;
}

const gradeOf = (r: GradedRollout): number => rubricScore(r.grades.map((g) => g.value));

function scoreItem(item: Item, config: RunConfig): Scored {
  const p = config.scope;
  const meanScores = item.gate.candidates.map((c, k) => {
    if (c.status !== 'valid') return undefined;
    const rollouts = item.judge.candidates[k]?.rollouts ?? [];
    if (rollouts.length !== config.groupSize)
      throw new Error(
        `document ${item.plan.docIndex}, task ${k}: ${rollouts.length} graded rollouts, expected ${config.groupSize}`,
      );
    return mean(rollouts.map(gradeOf));
  });
  const challengerRewards = item.propose.candidates.map((c, k) =>
    challengerReward(c.format.score, meanScores[k] !== undefined, meanScores[k] ?? 0, p.gateFailReward),
  );
  const candidate = selectTask(meanScores, p.taskSelection);
  if (candidate === undefined) return { item, challengerRewards, meanScores };
  const trajectories = item.solve.candidates[candidate]?.trajectories ?? [];
  const graded = item.judge.candidates[candidate]?.rollouts ?? [];
  const rollouts = trajectories.map((t, j): SolverScore => {
    const r = graded[j];
    if (!r) throw new Error(`document ${item.plan.docIndex}: rollout ${j} was not graded`);
    return solverScore(t, r, config);
  });
  return { item, challengerRewards, meanScores, selected: { candidate, rollouts } };
}

function solverScore(trajectory: Trajectory, graded: GradedRollout, config: RunConfig): SolverScore {
  const answerTokens = approxTokens(graded.answer ?? '');
  const penalty = lengthPenalty(answerTokens, config.scope.lengthPenalty);
  const score = gradeOf(graded);
  const parts = {
    lengthPenalty: penalty,
    score,
    format: solverFormat(trajectory.turns, graded.answer !== null),
    search: searchBonus(trajectory.turns),
  };
  return {
    reward: solverReward(parts),
    score,
    answerTokens,
    lengthPenalty: penalty,
    searches: trajectory.searches.length,
  };
}

function rowsOf(s: Scored, config: RunConfig): TrainingRow[] {
  const { item } = s;
  const rows: TrainingRow[] = [];
  const addGroup = (
    role: string,
    group: string,
    messages: TrainingRow['messages'],
    trajectories: readonly Trajectory[],
    rewards: readonly number[],
  ): void => {
    const [advantages = []] = computeAdvantages(config.training.estimator, [rewards]);
    trajectories.forEach((t, j) =>
      rows.push({
        messages,
        completion: t.completion,
        role,
        group,
        reward: rewards[j] ?? 0,
        advantage: advantages[j] ?? 0,
        lossMaskSpans: t.lossMaskSpans,
      }),
    );
  };
  addGroup(
    CHALLENGER,
    `${CHALLENGER}/doc-${item.plan.docIndex}`,
    item.propose.messages,
    item.propose.candidates.map((c) => c.trajectory),
    s.challengerRewards,
  );
  if (s.selected) {
    const k = s.selected.candidate;
    addGroup(
      SOLVER,
      `${SOLVER}/doc-${item.plan.docIndex}/task-${k}`,
      item.gate.candidates[k]?.solverMessages ?? [],
      item.solve.candidates[k]?.trajectories ?? [],
      s.selected.rollouts.map((r) => r.reward),
    );
  }
  return rows;
}

function metricsOf(
  scored: readonly Scored[],
  rows: readonly TrainingRow[],
  config: RunConfig,
): FilterOutput['metrics'] {
  const g = config.groupSize;
  const candidates = scored.flatMap((s) =>
    s.item.propose.candidates.map((c, k) => ({
      c,
      gated: s.item.gate.candidates[k],
      judged: s.item.judge.candidates[k],
    })),
  );
  const invalidReasons: Record<string, number> = {};
  for (const { gated } of candidates) {
    if (gated && gated.status !== 'valid')
      invalidReasons[gated.status] = (invalidReasons[gated.status] ?? 0) + 1;
  }
  const meanScores = scored.flatMap((s) => s.meanScores.flatMap((m) => (m === undefined ? [] : [m])));
  // ḡ is a mean of rubric shares, not a count of right answers: bin k holds the tasks with ḡ·G nearest k.
  const histogram = new Array<number>(g + 1).fill(0);
  for (const m of meanScores) {
    const k = Math.round(m * g);
    histogram[k] = (histogram[k] ?? 0) + 1;
  }
  const gated = candidates.flatMap(({ c }) => (c.gates ? [c.gates] : []));
  const grades = candidates.flatMap(({ judged }) => judged?.rollouts.flatMap((r) => r.grades) ?? []);
  const gateScores = gated.flatMap((v) => [v.identifiability, v.relevance]);
  const solver = scored.flatMap((s) => s.selected?.rollouts ?? []);
  const valid = meanScores.length;
  return {
    documents: scored.length,
    validTaskRate: candidates.length ? valid / candidates.length : 0,
    invalidReasons,
    passRateHistogram: histogram,
    zeroAdvantageFraction: zeroAdvantageFraction(rows),
    meanRewardByRole: meanRewardByRole(rows),
    rowsByRole: rowsByRole(rows),
    extra: {
      candidates: candidates.length,
      gatedCandidates: gated.length,
      /** QG pass rate over the candidates the judge gated (§7). */
      gatePassRate: gated.length
        ? gated.filter((v) => v.identifiability.value && v.relevance.value).length / gated.length
        : 0,
      identifiabilityPassRate: gated.length
        ? gated.filter((v) => v.identifiability.value).length / gated.length
        : 0,
      relevancePassRate: gated.length ? gated.filter((v) => v.relevance.value).length / gated.length : 0,
      gateFallbacks: gateScores.filter((v) => v.fallback).length,
      rubricsPerTask: mean(
        candidates.flatMap(({ c, gated: gc }) =>
          gc?.status === 'valid' ? [c.rubrics?.items.length ?? 0] : [],
        ),
      ),
      gradings: grades.length,
      gradeFallbacks: grades.filter((v) => v.fallback).length,
      noAnswerRollouts: candidates.reduce(
        (n, { judged }) => n + (judged?.rollouts.filter((r) => r.answer === null).length ?? 0),
        0,
      ),
      /** ḡ over every valid task (§6 dynamics: about 0.5 while the Challenger keeps up). */
      meanScore: mean(meanScores),
      /** Keep rate: valid tasks inside the selection band, one per document at most. */
      solverTasks: scored.filter((s) => s.selected).length,
      keepRate: valid ? scored.filter((s) => s.selected).length / valid : 0,
      challengerSearches: mean(candidates.map(({ c }) => c.trajectory.searches.length)),
      solverSearches: mean(solver.map((r) => r.searches)),
      solverAnswerTokens: mean(solver.map((r) => r.answerTokens)),
      solverLengthPenalty: mean(solver.map((r) => r.lengthPenalty)),
      solverScore: mean(solver.map((r) => r.score)),
    },
  };
}
