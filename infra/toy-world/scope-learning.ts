/**
 * SCOPE's toy world, per iteration (a `PointReader`) and at each evaluation (`scopeHeldOutScore`): rubric
 * scores, not rewards, since the Solver's reward also pays its format and search count, which it can raise
 * without answering better (§2: R_S = L·g + 0.5·F + 0.1·S).
 */
import { SCOPE_CALLS } from '../../activities/clients/llm-protocol';
import { getJsonl } from '../../activities/clients/storage/codec';
import { shardKey } from '../../activities/clients/storage/keys';
import type { ObjectStore } from '../../activities/clients/storage';
import type { ChatMessage } from '../../activities/clients/trainer-contract';
import { parseBinaryScore } from '../../activities/judges/binary';
import { extractAnswer, parseRubrics } from '../../activities/recipes/scope/parse';
import { graderMessages, rubricMessages } from '../../activities/recipes/scope/prompts';
import type { GradedRollout, ScopeGated, ScopeJudged } from '../../activities/recipes/scope/records';
import { difficultyReward, meanGrade } from '../../activities/recipes/scope/rewards';
import type { BenchmarkResult } from '../../contracts/evaluation';
import {
  heldOutQuestions,
  mean,
  readJsonlFile,
  storedItems,
  type Measured,
  type PointReader,
} from './learning';
import { scopeGrader } from './scope-grader';
import { parseScopeQuestion, searchesOf } from './scope-world';
import { linkOf } from './ssp-world';

export interface ScopePoint {
  /** The Challenger's mean rubric score on its valid tasks: ḡ per task, averaged (f_diff pays most at 0.5). */
  challengerRubricScore: number;
  /** f_diff(ḡ) per valid task, averaged: what the Challenger's tasks earn of its difficulty reward (Eq. 5). */
  challengerDifficultyReward: number;
  /** Valid tasks of the iteration (both gates passed, rubrics written) that the Solver answered. */
  validTasks: number;
  /** Shares of the Challenger's candidates by status (valid, no_task, gate_relevance, ...). */
  statusShares: Record<string, number>;
  /**
   * Per ask of the world's ladder (founder, both, birthplace; `other` for a task that is none of its
   * questions): its share of the valid tasks and the Challenger's mean rubric score on them.
   */
  asks: Record<string, { share: number; rubricScore: number }>;
}

export const scopePoint: PointReader<ScopePoint> = async ({ store, runId, iteration }) => {
  const statuses: string[] = [];
  const tasks: Array<{ ask: string; rollouts: GradedRollout[] }> = [];
  // A record's unit is its place in its shard: the gate's and the judge's records pair up shard by shard.
  for (let shard = 0; ; shard++) {
    const [gated, judged] = await Promise.all([
      getJsonl<ScopeGated>(store, shardKey(runId, iteration, 'gate', shard)),
      getJsonl<ScopeJudged>(store, shardKey(runId, iteration, 'judge', shard)),
    ]);
    if (gated === undefined) break;
    const judgedByUnit = new Map((judged ?? []).map((j) => [j.unit, j]));
    for (const g of gated)
      g.candidates.forEach((c, k) => {
        statuses.push(c.status);
        const rollouts = judgedByUnit.get(g.unit)?.candidates[k]?.rollouts ?? [];
        if (c.status === 'valid' && rollouts.length > 0)
          tasks.push({ ask: parseScopeQuestion(c.question ?? '')?.ask ?? 'other', rollouts });
      });
  }
  const statusShares: Record<string, number> = {};
  for (const s of statuses) statusShares[s] = (statusShares[s] ?? 0) + 1 / statuses.length;
  const asks: ScopePoint['asks'] = {};
  for (const ask of new Set(tasks.map((t) => t.ask))) {
    const of = tasks.filter((t) => t.ask === ask);
    asks[ask] = { share: of.length / tasks.length, rubricScore: mean(of.map((t) => meanGrade(t.rollouts))) };
  }
  return {
    challengerRubricScore: mean(tasks.map((t) => meanGrade(t.rollouts))),
    challengerDifficultyReward: mean(tasks.map((t) => difficultyReward(meanGrade(t.rollouts)))),
    validTasks: tasks.length,
    statusShares,
    asks,
  };
};

const text = (messages: ChatMessage[]): string => messages.map((m) => m.content).join('\n');

/**
 * The Solver's held-out rubric score of one evaluation: each sample's final `<answer>` graded by the world's
 * grader against the rubrics it writes for the item's question from the world's documents, the share met;
 * averaged over samples, then items, with the items' standard error, and per ask. `corpus` and `heldOut` are
 * the world's files (its documents, and the benchmark's questions by id).
 */
export function scopeHeldOutScore(
  corpus: string,
  heldOut: string,
): (store: ObjectStore, result: BenchmarkResult) => Promise<Measured> {
  const documents = readJsonlFile<{ title: string; text: string }>(corpus);
  const byTitle = new Map(documents.map((d) => [d.title, d.text]));
  const questions = heldOutQuestions(heldOut);
  const grader = scopeGrader({ documents }, 'rule');
  /** The documents a full answer reads: the town's, and past the founder its founder's (the rubric context). */
  const context = (question: string): string[] => {
    const task = parseScopeQuestion(question);
    const town = task && byTitle.get(task.town);
    if (!task || town === undefined)
      throw new Error(`held-out question "${question}" is not a task of the world`);
    const founder = searchesOf(task.ask) === 2 ? byTitle.get(linkOf(town, task.town) ?? '') : undefined;
    return founder === undefined ? [town] : [town, founder];
  };
  return async (store, result) => {
    const items = await storedItems(store, result);
    const asks: string[] = [];
    const scores = items.map((item) => {
      const question = questions.get(item.id);
      if (question === undefined) throw new Error(`held-out item ${item.id} is not in ${heldOut}`);
      asks.push(parseScopeQuestion(question)?.ask ?? 'other');
      const rubrics = parseRubrics(
        grader.answer(
          SCOPE_CALLS.rubrics,
          text(rubricMessages('long_form_qa', question, context(question))),
          0,
        ),
        { min: 1, max: 5 },
      );
      return mean(
        item.samples.map((s) => {
          const answer = extractAnswer(s.completion);
          if (answer === null || rubrics.length === 0) return 0;
          const grades = rubrics.map(
            (r) =>
              parseBinaryScore(grader.answer(SCOPE_CALLS.grade, text(graderMessages(question, answer, r)), 0))
                .value,
          );
          return mean(grades);
        }),
      );
    });
    const m = mean(scores);
    const sd = Math.sqrt(mean(scores.map((x) => (x - m) ** 2)));
    const byKind: Record<string, number> = {};
    for (const ask of new Set(asks)) byKind[ask] = mean(scores.filter((_, i) => asks[i] === ask));
    return { accuracy: m, standardError: sd / Math.sqrt(scores.length), byKind };
  };
}
