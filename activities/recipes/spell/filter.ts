import { alignUnits, type UnitRecords } from '../align';
import type { FilterContext, FilterOutput, ShardRecords } from '../types';
import type { TrainingRow } from '../../clients/trainer-contract';
import { sampledFields, type SampledTokens } from '../../clients/sampled-tokens';
import type { RunConfig } from '../../../config/schema';
import { zScores } from '../../scoring/advantages';
import { seededRng } from '../../lib/rng';
import { mean, meanRewardByRole, rowsByRole, zeroAdvantageFraction } from '../role-stats';
import { composeBatch, type Composition, type ScoredItem } from './compose';
import { entersHistory, historyKey, pushHistory, readState } from './memory';
import { exampleText } from './prompts';
import { agreement, questionerReward, scoreResponses, verifierRewards } from './rewards';
import {
  QUESTIONER,
  RESPONDER,
  SPELL_TASKS,
  VERIFIER,
  type SpellGated,
  type SpellJudged,
  type SpellProposal,
  type SpellSolved,
  type SpellState,
  type SpellUnit,
} from './records';

type SpellShard = ShardRecords<SpellProposal, SpellGated, SpellSolved, SpellJudged, SpellUnit>;

/** One question's records across the stages. */
type Item = UnitRecords<SpellProposal, SpellGated, SpellSolved, SpellJudged, SpellUnit>;

/** A scored question, with each verified response's majority kept for the verifier-vs-rule metrics. */
interface Scored extends ScoredItem {
  meanReward: number;
  majorities: Array<{ majority: 0 | 1; rule: boolean }>;
}

/**
 * Steps 9–11 (spell.md §1–§4): rewards per role, the history pushes, role-specific sampling and the
 * advantages of the one update. Deterministic in its inputs and (seed, iteration).
 * - Responder and verifier advantages: z-score within each group of G, unbiased std + 1e-6 (Eq. 8).
 * - Questioner advantages: REINFORCE++-baseline, a z-score over the batch's questioner samples of each
 *   task (Eq. 9, per task as in the code).
 * The next state is the committed history plus this iteration's solvable questions.
 */
export function filterSpell(ctx: FilterContext<SpellState>, shards: SpellShard[]): FilterOutput<SpellState> {
  const { config, iteration } = ctx;
  const p = config.spell;
  const items = alignUnits(shards);
  const scored = items.flatMap((item) => scoreItem(item, config) ?? []);
  const composition = composeBatch(
    scored,
    {
      responderGroups: p.responderGroups,
      verifierRatio: p.verifierRatio,
      agreement: p.verifierAgreement,
      consistency: p.verifierConsistency,
    },
    seededRng(config.seed, iteration, 'compose'),
  );
  const byIndex = new Map(items.map((item) => [item.plan.docIndex, item]));
  const all = trainingRows(composition, (docIndex) => byIndex.get(docIndex) as Item);
  const rows = all.filter((r) => !(p.frozenRoles as readonly string[]).includes(r.role));

  const pushes = scored.flatMap((s) => {
    const item = byIndex.get(s.docIndex) as Item;
    const question = item.gate.question;
    if (s.status !== 'valid' || !question || !entersHistory(p.historyRule, s.meanReward)) return [];
    const entry = {
      docs: item.plan.questionerDocs,
      question: exampleText(question),
      answer: question.answer,
    };
    return [{ key: historyKey(item.plan.task, item.plan.cluster), entry }];
  });
  const state = pushHistory(readState(ctx.state), pushes, p.historySize);

  return { rows, state, metrics: metricsOf(items, scored, composition, rows, state, config) };
}

/** §2: rewards of one question; undefined for a discarded one (it has no questioner sample). */
function scoreItem({ plan, gate, judge }: Item, config: RunConfig): Scored | undefined {
  const p = config.spell;
  const head = { docIndex: plan.docIndex, task: plan.task, responderRewards: [], verifierGroups: [] };
  const none = { meanReward: 0, majorities: [] };
  switch (gate.status) {
    case 'discarded':
      return undefined;
    case 'bad_format':
      return { ...head, ...none, status: 'bad_format', questionerReward: p.badFormatPenalty };
    case 'bad_ground':
      return { ...head, ...none, status: 'bad_ground', questionerReward: p.ungroundedPenalty };
    case 'valid': {
      if (judge.responses.length !== config.groupSize)
        throw new Error(
          `item ${plan.docIndex}: ${judge.responses.length} judged responses, expected ${config.groupSize}`,
        );
      const judged = scoreResponses(judge.responses);
      const rewards = judged.map((r) => r.reward);
      const meanReward = rewards.reduce((a, b) => a + b, 0) / rewards.length;
      return {
        ...head,
        status: 'valid',
        questionerReward: questionerReward(p.questionerReward, meanReward, p.sigma),
        responderRewards: rewards,
        meanReward,
        verifierGroups: judged.flatMap((r, response) =>
          r.verifier && r.majority !== undefined
            ? [
                {
                  response,
                  rewards: verifierRewards(r.verifier.votes, r.majority),
                  agreement: agreement(r.verifier.votes, r.majority),
                  consistent: r.majority === (r.rule ? 1 : 0),
                },
              ]
            : [],
        ),
        majorities: judged.flatMap((r) =>
          r.majority === undefined ? [] : [{ majority: r.majority, rule: r.rule }],
        ),
      };
    }
  }
}

/** The batch rows, role by role, with their advantages (§3). */
function trainingRows(c: Composition, itemOf: (docIndex: number) => Item): TrainingRow[] {
  const rows: TrainingRow[] = [];
  for (const task of SPELL_TASKS) {
    const ofTask = c.questioner.filter((q) => q.task === task);
    const advantages = zScores(
      ofTask.map((q) => q.questionerReward),
      1,
    );
    ofTask.forEach((q, i) => {
      const { propose } = itemOf(q.docIndex);
      rows.push({
        messages: propose.messages,
        completion: propose.completion,
        role: QUESTIONER,
        group: `${QUESTIONER}/${task}`,
        reward: q.questionerReward,
        advantage: advantages[i] ?? 0,
        ...sampledFields(propose.sampled),
      });
    });
  }
  const group = (
    role: string,
    name: string,
    messages: TrainingRow['messages'],
    completions: readonly string[],
    rewards: readonly number[],
    sampled: ReadonlyArray<SampledTokens | null> | undefined,
  ): void => {
    const advantages = zScores(rewards, 1);
    completions.forEach((completion, j) =>
      rows.push({
        messages,
        completion,
        role,
        group: name,
        reward: rewards[j] ?? 0,
        advantage: advantages[j] ?? 0,
        ...sampledFields(sampled?.[j] ?? undefined),
      }),
    );
  };
  for (const q of c.responder) {
    const { gate, solve } = itemOf(q.docIndex);
    group(
      RESPONDER,
      `${RESPONDER}/q-${q.docIndex}`,
      gate.responderMessages ?? [],
      solve.completions,
      q.responderRewards,
      solve.sampled,
    );
  }
  for (const { item, group: g } of c.verifier) {
    const verifier = itemOf(item.docIndex).judge.responses[g.response]?.verifier;
    if (!verifier) throw new Error(`item ${item.docIndex}: response ${g.response} has no verifier judgments`);
    group(
      VERIFIER,
      `${VERIFIER}/q-${item.docIndex}/r-${g.response}`,
      verifier.messages,
      verifier.completions,
      g.rewards,
      verifier.sampled,
    );
  }
  return rows;
}

function metricsOf(
  items: readonly Item[],
  scored: readonly Scored[],
  c: Composition,
  rows: readonly TrainingRow[],
  state: SpellState,
  config: RunConfig,
): FilterOutput['metrics'] {
  const g = config.groupSize;
  const invalidReasons: Record<string, number> = {};
  for (const { gate } of items) {
    if (gate.status === 'valid') continue;
    const reason = gate.status === 'bad_ground' ? 'bad_ground' : `${gate.status}:${gate.reason ?? 'unknown'}`;
    invalidReasons[reason] = (invalidReasons[reason] ?? 0) + 1;
  }
  const valid = scored.filter((s) => s.status === 'valid');
  const histogram = new Array<number>(g + 1).fill(0);
  for (const s of valid) {
    const k = Math.round(s.meanReward * g);
    histogram[k] = (histogram[k] ?? 0) + 1;
  }
  const extra: Record<string, number> = {
    solvableQuestions: c.solvable,
    responderGroups: c.responder.length,
    questionerPositives: c.responder.length,
    questionerNegatives: c.questioner.length - c.responder.length,
    verifierCandidates: c.verifierCandidates,
    verifierTarget: c.verifierTarget,
    verifierGroups: c.verifier.length,
    historyKeys: Object.keys(state.history).length,
    historyEntries: Object.values(state.history).reduce((s, h) => s + h.length, 0),
    withHistoryItems: items.filter((i) => i.plan.examples.length > 0).length,
    verifierRuleAgreement: verifierRuleAgreement(items),
    meanQuestionerDocuments: mean(items.map((i) => i.plan.questionerDocs.length)),
  };
  for (const task of SPELL_TASKS) {
    const ofTask = valid.filter((s) => s.task === task);
    extra[`items.${task}`] = items.filter((i) => i.plan.task === task).length;
    extra[`valid.${task}`] = ofTask.length;
    extra[`responderGroups.${task}`] = c.responder.filter((q) => q.task === task).length;
    // §9: high early for general QA, falling as the verifier learns.
    const judged = ofTask.flatMap((s) => s.majorities);
    extra[`verifierRuleDisagreement.${task}`] = judged.length
      ? judged.filter((m) => m.majority !== (m.rule ? 1 : 0)).length / judged.length
      : 0;
  }
  return {
    documents: items.length,
    validTaskRate: items.length ? valid.length / items.length : 0,
    invalidReasons,
    passRateHistogram: histogram,
    zeroAdvantageFraction: zeroAdvantageFraction(rows),
    meanRewardByRole: meanRewardByRole(rows),
    rowsByRole: rowsByRole(rows),
    extra,
  };
}

/**
 * The share of the verifier's judgments (every vote, an invalid one included) that say what the rule check
 * says of the response they judge: how far the policy's own judging agrees with the rule, before majorities.
 */
function verifierRuleAgreement(items: readonly Item[]): number {
  const agrees = items.flatMap(({ gate, judge }) =>
    gate.status === 'valid'
      ? judge.responses.flatMap((r) => (r.verifier?.votes ?? []).map((v) => v === (r.rule ? 1 : 0)))
      : [],
  );
  return agrees.length ? agrees.filter(Boolean).length / agrees.length : 0;
}
