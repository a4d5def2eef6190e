import type { FilterContext, FilterOutput, ShardRecords } from '../types';
import type { TrainingRow } from '../../clients/trainer-contract';
import { sampledFields } from '../../clients/sampled-tokens';
import { computeAdvantages } from '../../scoring/advantages';
import { seededRng } from '../../lib/rng';
import { meanRewardByRole, rowsByRole } from '../role-stats';
import { challengerReward, reasonerReward } from './rewards';
import {
  CHALLENGER,
  REASONER,
  type SpiceGated,
  type SpiceJudged,
  type SpiceProposal,
  type SpiceSolved,
} from './records';

type SpiceShard = ShardRecords<SpiceProposal, SpiceGated, SpiceSolved, SpiceJudged>;

interface Group {
  role: string;
  name: string;
  rows: Array<Omit<TrainingRow, 'advantage'>>;
}

/**
 * Rewards and advantages (Algorithm 1, steps 2d–4):
 * - Challenger: r_C from the G Reasoner answers of each valid task (Eq. 1 by default), ρ for an invalid one;
 *   its group is the document's G Challenger trajectories.
 * - Reasoner: one random valid task per document, whose G answers (the same rollouts that gave r_C) form
 *   the group, with r_R = 1[â ≡ a*].
 * - Advantages per role and group with the configured estimator (Dr.GRPO: r − group mean, no std).
 */
export function filterSpice(ctx: FilterContext<undefined>, shards: SpiceShard[]): FilterOutput<undefined> {
  const { config, iteration } = ctx;
  const params = { tau: config.spice.tau, targetVariance: config.spice.targetVariance };
  const g = config.groupSize;
  const docs = shards
    .flatMap((s) =>
      s.propose.map((p, i) => ({ propose: p, gate: s.gate[i], solve: s.solve[i], judge: s.judge[i] })),
    )
    .sort((a, b) => a.propose.docIndex - b.propose.docIndex);

  const groups: Group[] = [];
  const invalidReasons: Record<string, number> = {};
  const histogram = new Array<number>(g + 1).fill(0);
  const passByKind: Record<string, { correct: number; total: number }> = {};
  let trajectories = 0;
  let validTrajectories = 0;
  let withoutTask = 0;

  for (const { propose, gate, solve, judge } of docs) {
    if (!gate || !solve || !judge || gate.unit !== propose.unit || judge.unit !== propose.unit) {
      throw new Error(`document ${propose.docIndex}: stage records are missing or misaligned`);
    }
    const judged = new Map(judge.tasks.map((t) => [t.trajectory, t]));
    const challenger: Group = { role: CHALLENGER, name: `${CHALLENGER}/doc-${propose.docIndex}`, rows: [] };
    propose.trajectories.forEach((t, i) => {
      const verdict = gate.verdicts[i];
      trajectories++;
      let reward = config.spice.invalidPenalty;
      if (verdict?.valid) {
        const task = judged.get(i);
        if (!task)
          throw new Error(`document ${propose.docIndex}: valid trajectory ${i} has no judged answers`);
        validTrajectories++;
        reward = challengerReward(config.spice.challengerReward, task.correct, params);
        const k = task.correct.filter(Boolean).length;
        histogram[Math.min(k, g)] = (histogram[Math.min(k, g)] ?? 0) + 1;
        const kind = (passByKind[verdict.task.answerKind] ??= { correct: 0, total: 0 });
        kind.correct += k;
        kind.total += task.correct.length;
      } else {
        const reason = verdict?.reason ?? 'missing_verdict';
        invalidReasons[reason] = (invalidReasons[reason] ?? 0) + 1;
      }
      challenger.rows.push({
        messages: propose.messages,
        completion: t.completion,
        role: CHALLENGER,
        group: challenger.name,
        reward,
        ...sampledFields(t.sampled),
      });
    });
    groups.push(challenger);

    const validTasks = judge.tasks.map((t) => t.trajectory);
    if (validTasks.length === 0) {
      withoutTask++;
      continue;
    }
    const picked = seededRng(config.seed, iteration, 'reasoner-task', propose.docIndex).pick(validTasks);
    const answers = solve.answers.find((a) => a.trajectory === picked);
    const correct = judged.get(picked)?.correct;
    if (!answers || !correct)
      throw new Error(`document ${propose.docIndex}: no answers for trajectory ${picked}`);
    const name = `${REASONER}/doc-${propose.docIndex}`;
    groups.push({
      role: REASONER,
      name,
      rows: answers.completions.map((completion, j) => ({
        messages: answers.messages,
        completion,
        role: REASONER,
        group: name,
        reward: reasonerReward(correct[j] ?? false),
        ...sampledFields(answers.sampled?.[j] ?? undefined),
      })),
    });
  }

  const rows = withAdvantages(config.training.estimator, groups);
  const zero = rows.filter((r) => r.advantage === 0).length;
  const kept = config.spice.dropZeroAdvantage ? rows.filter((r) => r.advantage !== 0) : rows;
  return {
    rows: kept,
    metrics: {
      documents: docs.length,
      validTaskRate: trajectories ? validTrajectories / trajectories : 0,
      invalidReasons,
      passRateHistogram: histogram,
      zeroAdvantageFraction: rows.length ? zero / rows.length : 0,
      meanRewardByRole: meanRewardByRole(rows),
      rowsByRole: rowsByRole(kept),
      extra: {
        attempts: sum(docs.map((d) => d.propose.attempts)),
        validAttempts: sum(docs.map((d) => d.propose.validAttempts)),
        typeSelectionFallbacks: docs.filter((d) => d.propose.typeSelectionFallback).length,
        mcqDocuments: docs.filter((d) => d.propose.format === 'mcq').length,
        documentsWithoutValidTask: withoutTask,
        ...Object.fromEntries(
          Object.entries(passByKind).map(([kind, v]) => [
            `passRate.${kind}`,
            v.total ? v.correct / v.total : 0,
          ]),
        ),
      },
    },
  };
}

/** Advantages per role: group estimators see each group, REINFORCE++ normalises over the role's batch. */
function withAdvantages(
  estimator: FilterContext['config']['training']['estimator'],
  groups: Group[],
): TrainingRow[] {
  const out: TrainingRow[] = [];
  for (const role of [CHALLENGER, REASONER]) {
    const ofRole = groups.filter((gr) => gr.role === role);
    const advantages = computeAdvantages(
      estimator,
      ofRole.map((gr) => gr.rows.map((r) => r.reward)),
    );
    ofRole.forEach((gr, i) =>
      gr.rows.forEach((r, j) => out.push({ ...r, advantage: advantages[i]?.[j] ?? 0 })),
    );
  }
  return out;
}

const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
