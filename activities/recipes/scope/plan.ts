import type { PlanContext } from '../types';
import { seededRng, type Rng } from '../../lib/rng';
import { NON_RETRYABLE, nonRetryable } from '../../lib/errors';
import type { ScopeUnit } from './records';

type Planned = Omit<ScopeUnit, 'unit' | 'docIndex'>;

/**
 * Stage 1, step 1 (scope.md §1): B prompts (source document, task type, search budget), one per document.
 * The documents are consecutive windows of one run-wide seeded permutation of the corpus, so iterations use
 * non-overlapping documents until the corpus is exhausted (then the order repeats); task types are drawn
 * uniformly from `scope.taskTypes` ([U]); budgets 1/2/3 are stratified 4:3:2 over the batch.
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
  const { segments } = await ctx.corpus();
  if (segments.length === 0) throw new Error(`corpus ${config.corpus.uri} has no documents`);
  const order = seededRng(config.seed, 'scope-order').shuffle(segments.map((_, i) => i));
  const start = (iteration - 1) * config.batchSize;
  const budgets = stratifiedBudgets(
    config.batchSize,
    p.searchTurnWeights,
    seededRng(config.seed, iteration, 'budget'),
  );
  const types = seededRng(config.seed, iteration, 'task-type');
  return budgets.map((searchBudget, i): Planned => {
    const s = segments[order[(start + i) % order.length] as number];
    if (!s) throw new Error(`plan: no document at position ${start + i}`);
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
