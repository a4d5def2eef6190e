import type { PlanContext } from '../types';
import { seededRng, shuffledRange, type Rng } from '../../lib/rng';
import type { CorpusSegment } from '../../corpus/corpus';
import { NON_RETRYABLE, nonRetryable } from '../../lib/errors';
import type { ScopeUnit } from './records';
import { documentOffset, isSolverStep, scopeStep } from './schedule';
import { MAX_SHARDS } from '../../../config/schema';

type Planned = Omit<ScopeUnit, 'unit' | 'docIndex'>;

/**
 * Stage 1, step 1 (scope.md §1): B prompts (source document, task type, search budget), one per document;
 * in a Solver step (stage 2) a round of `candidatesPerRound` fresh documents instead, one candidate task
 * each. The documents are consecutive windows of one run-wide seeded permutation of the corpus, so steps
 * use non-overlapping documents until the corpus is exhausted (then the order repeats; schedule.ts
 * `documentOffset`); task types are drawn uniformly from `scope.taskTypes` ([U]); budgets 1/2/3 are
 * stratified 4:3:2 over the batch.
 */
export async function planScope(ctx: PlanContext): Promise<Planned[]> {
  const { config, iteration } = ctx;
  const p = config.scope;
  if (!config.inference.roles.judge?.frozen) {
    // Without its own frozen endpoint the judge would be the policy being trained, grading itself.
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      'scope: the judge is the frozen base model on its own server: set inference.roles.judge to ' +
        '{"baseUrl": "...", "model": "...", "frozen": true}',
    );
  }
  const { candidatesPerRound } = config.scope.schedule;
  if (scopeStep(config, iteration) && Math.ceil(candidatesPerRound / config.shardSize) > MAX_SHARDS) {
    // Checked here, not by the config schema: a schema refinement would fail the replay of runs recorded
    // before the schedule existed, whose resolved config now carries it.
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `scope.schedule.candidatesPerRound: ${candidatesPerRound} candidates in shards of ${config.shardSize} ` +
        `make more than ${MAX_SHARDS} shards per round; raise shardSize or lower candidatesPerRound`,
    );
  }
  const source = await ctx.segments();
  if (source.count === 0) throw new Error(`corpus ${config.corpus.uri} has no documents`);
  const order = shuffledRange(seededRng(config.seed, 'scope-order'), source.count);
  const round = ctx.round ?? 0;
  const start = documentOffset(config, iteration, round);
  const count = isSolverStep(config, iteration) ? config.scope.schedule.candidatesPerRound : config.batchSize;
  // A later selection round draws its own budgets and types; the first keeps the seeds it always had.
  const at = round > 0 ? [iteration, round] : [iteration];
  const budgets = stratifiedBudgets(count, p.searchTurnWeights, seededRng(config.seed, ...at, 'budget'));
  const types = seededRng(config.seed, ...at, 'task-type');
  const segments = await source.read(budgets.map((_, i) => order[(start + i) % order.length] as number));
  return budgets.map((searchBudget, i): Planned => {
    const s = segments[i] as CorpusSegment;
    return { segmentId: s.id, docId: s.docId, text: s.text, taskType: types.pick(p.taskTypes), searchBudget };
  });
}

/**
 * n search budgets (1, 2, 3) in the proportions of `weights`, stratified rather than drawn independently:
 * each budget gets its share rounded down, the remainder goes to the largest fractional parts (ties to the
 * smaller budget), and the list is shuffled. At n = 9 and 4:3:2 that is exactly four 1s, three 2s, two 3s.
 */
export function stratifiedBudgets(n: number, weights: readonly number[], rng: Rng): number[] {
  const total = weights.reduce((a, b) => a + b, 0);
  const exact = weights.map((w) => (n * w) / total);
  const counts = exact.map(Math.floor);
  const byRemainder = exact
    .map((x, i) => ({ i, r: x - Math.floor(x) }))
    .sort((a, b) => b.r - a.r || a.i - b.i);
  for (let left = n - counts.reduce((a, b) => a + b, 0), k = 0; left > 0; left--, k++) {
    const i = (byRemainder[k % byRemainder.length] as { i: number }).i;
    counts[i] = (counts[i] ?? 0) + 1;
  }
  return rng.shuffle(counts.flatMap((c, i) => Array.from({ length: c }, () => i + 1)));
}
