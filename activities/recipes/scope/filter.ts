import { alignUnits, type UnitRecords } from '../align';
import type { FilterContext, FilterOutput, ShardRecords } from '../types';
import type { TrainingRow } from '../../clients/trainer-contract';
import type { Trajectory } from '../../tools/types';
import { trajectoryTokenFields } from '../../tools/search-loop';
import type { RunConfig } from '../../../config/schema';
import { computeAdvantages } from '../../scoring/advantages';
import { approxTokens } from '../../scoring/tokens';
import { mean, meanRewardByRole, rowsByRole, zeroAdvantageFraction } from '../role-stats';
import {
  challengerReward,
  gradeOf,
  lengthPenalty,
  meanGrade,
  searchBonus,
  solverFormat,
  solverReward,
} from './rewards';
import { selectTask } from './select';
import { scopeStep } from './schedule';
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
  selected?: { candidate: number; rollouts: SolverScore[]; trajectories: readonly Trajectory[] };
}

/**
 * Rewards, task selection and the batch (scope.md §1–§2); deterministic in its inputs.
 * - Challenger: G rows per document, R_C (Eq. 4) per rollout, advantages within the document's group.
 * - Solver: for the one task per document selected by ḡ, G rollouts with R_S (Eq. 6), advantages within
 *   the group. Groups outside [0.2, 0.8] are not trained (their ḡ still rewards the Challenger).
 * Which roles train follows the schedule (schedule.ts): a Challenger step trains the Challenger only (the
 * frozen Solver's G rollouts only measure ḡ); a Solver step trains the Solver only, on the tasks its
 * N_filter rollouts kept (at most `solverTasks`, in document order), with the G fresh rollouts the judge stage
 * sampled for each; `joint` trains both from the same rollouts.
 * Both use `training.estimator` (the preset's GRPO: (R − mean)/(std + ε)). Every row carries its
 * trajectory's `lossMaskSpans`, so retrieved text is not trained on (the Search-R1 masking, §2 [U]).
 */
export function filterScope(ctx: FilterContext, shards: ScopeShard[]): FilterOutput {
  const { config, iteration } = ctx;
  const stage = scopeStep(config, iteration)?.stage;
  const items = alignItems(shards);
  const scored =
    stage === SOLVER
      ? selectForSolver(items, config)
      : items.map((item) => scoreItem(item, config, stage !== CHALLENGER));
  const rows = scored.flatMap((s) => rowsOf(s, config, stage !== SOLVER));
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

/** R_C of every candidate and, when the Solver trains too, the task selected among them. */
function scoreItem(item: Item, config: RunConfig, trainSolver: boolean): Scored {
  const p = config.scope;
  const meanScores = item.gate.candidates.map((c, k) => {
    if (c.status !== 'valid') return undefined;
    const rollouts = item.judge.candidates[k]?.rollouts ?? [];
    if (rollouts.length !== config.groupSize)
      throw new Error(
        `document ${item.plan.docIndex}, task ${k}: ${rollouts.length} graded rollouts, expected ${config.groupSize}`,
      );
    return meanGrade(rollouts);
  });
  const challengerRewards = item.propose.candidates.map((c, k) =>
    challengerReward(c.format.score, meanScores[k] !== undefined, meanScores[k] ?? 0, p.gateFailReward),
  );
  const candidate = trainSolver ? selectTask(meanScores, p.taskSelection) : undefined;
  if (candidate === undefined) return { item, challengerRewards, meanScores };
  const trajectories = item.solve.candidates[candidate]?.trajectories ?? [];
  const graded = item.judge.candidates[candidate]?.rollouts ?? [];
  const rollouts = solverScores(item, trajectories, graded, config);
  return { item, challengerRewards, meanScores, selected: { candidate, rollouts, trajectories } };
}

/**
 * A Solver step's documents: ḡ of each one's candidate from its N_filter graded rollouts, and the kept tasks'
 * fresh rollouts, the first `solverTasks` of them in document order (a step that gathered more keeps those).
 */
function selectForSolver(items: readonly Item[], config: RunConfig): Scored[] {
  const { filterRollouts, solverTasks } = config.scope.schedule;
  let kept = 0;
  return items.map((item): Scored => {
    const meanScores = item.gate.candidates.map((c, k) => {
      if (c.status !== 'valid') return undefined;
      const rollouts = item.judge.candidates[k]?.rollouts ?? [];
      if (rollouts.length !== filterRollouts)
        throw new Error(
          `document ${item.plan.docIndex}, task ${k}: ${rollouts.length} graded rollouts, expected ${filterRollouts}`,
        );
      return meanGrade(rollouts);
    });
    const candidate = selectTask(meanScores, config.scope.taskSelection);
    const unselected = { item, challengerRewards: [], meanScores };
    if (candidate === undefined || kept >= solverTasks) return unselected;
    const training = item.judge.candidates[candidate]?.training;
    if (!training)
      throw new Error(`document ${item.plan.docIndex}: task ${candidate} was kept without training rollouts`);
    kept++;
    const rollouts = solverScores(item, training.trajectories, training.rollouts, config);
    return { ...unselected, selected: { candidate, rollouts, trajectories: training.trajectories } };
  });
}

function solverScores(
  item: Item,
  trajectories: readonly Trajectory[],
  graded: readonly GradedRollout[],
  config: RunConfig,
): SolverScore[] {
  return trajectories.map((t, j): SolverScore => {
    const r = graded[j];
    if (!r) throw new Error(`document ${item.plan.docIndex}: rollout ${j} was not graded`);
    return solverScore(t, r, config);
  });
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

function rowsOf(s: Scored, config: RunConfig, trainChallenger: boolean): TrainingRow[] {
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
        ...trajectoryTokenFields(t),
      }),
    );
  };
  if (trainChallenger)
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
      s.selected.trajectories,
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
  const graded = candidates.flatMap(({ judged }) => [
    ...(judged?.rollouts ?? []),
    ...(judged?.training?.rollouts ?? []),
  ]);
  const grades = graded.flatMap((r) => r.grades);
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
      noAnswerRollouts: graded.filter((r) => r.answer === null).length,
      /** ḡ over every valid task (§6 dynamics: about 0.5 while the Challenger keeps up). */
      meanScore: mean(meanScores),
      /** Tasks the Solver trains on: inside the selection band, one per document at most. */
      solverTasks: scored.filter((s) => s.selected).length,
      /** A Solver step's tasks kept in the band, before the cut to `solverTasks`. */
      keptTasks: candidates.filter(({ judged }) => judged?.training).length,
      keepRate: valid ? scored.filter((s) => s.selected).length / valid : 0,
      challengerSearches: mean(candidates.map(({ c }) => c.trajectory.searches.length)),
      solverSearches: mean(solver.map((r) => r.searches)),
      solverAnswerTokens: mean(solver.map((r) => r.answerTokens)),
      solverLengthPenalty: mean(solver.map((r) => r.lengthPenalty)),
      solverScore: mean(solver.map((r) => r.score)),
    },
  };
}
