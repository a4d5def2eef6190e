import type { PlanContext } from '../types';
import { sampleSegments } from '../../corpus/sample';
import { seededRng, type Rng } from '../../lib/rng';
import { NON_RETRYABLE, nonRetryable } from '../../lib/errors';
import { buildClusters, type Cluster } from './clusters';
import { historyKey, questionerDocuments, readState } from './memory';
import { LETTERS, SPELL_TASKS, type SpellState, type SpellTask, type SpellUnit } from './records';

type Planned = Omit<SpellUnit, 'unit' | 'docIndex'>;

/**
 * Step 1–2 of the loop (spell.md §1): B (cluster, task) items, tasks drawn by `taskWeights` (1:1:1) and
 * clusters uniformly among those serving the task, without repeats while there are enough; each item gets
 * its questioner context from the history committed by the previous iteration. Seeded by (seed, iteration),
 * so a retried plan, or a run resumed from the same commit, plans the same items.
 *
 * Round r of the accumulator (the recipe's `accumulation`) plans items rB..(r+1)B−1 of one stream per step:
 * the task draws and each task's cluster draws continue where the earlier rounds stopped, so no cluster
 * repeats within the step while there are enough. Rounds share the committed history: it moves once per
 * step, with the filter (the code pushes after every round; with clusters not repeating, a round would
 * rarely see an earlier round's push anyway).
 */
export async function planSpell(ctx: PlanContext<SpellState>): Promise<Planned[]> {
  const { config, iteration } = ctx;
  const p = config.spell;
  if (config.training.estimator !== 'grpo') {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `training.estimator: SPELL's advantages are fixed per role by the paper (group z-scores, a per-task ` +
        `batch z-score for the questioner); set "grpo" (got "${config.training.estimator}")`,
    );
  }
  const state = readState(ctx.state);
  const clusters = buildClusters((await ctx.corpus()).segments, p);
  const tasks = SPELL_TASKS.map((task) => ({
    task,
    weight: p.taskWeights[task],
    clusters: clusters.filter((c) => c.tasks.includes(task)),
  })).filter((t) => t.weight > 0 && t.clusters.length > 0);
  if (tasks.length === 0) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `spell.taskWeights: no task with a positive weight has a cluster in ${config.corpus.uri} ` +
        `(clusters: ${clusters.length})`,
    );
  }

  const first = (ctx.round ?? 0) * config.batchSize;
  const taskRng = seededRng(config.seed, iteration, 'plan');
  const drawnTasks = Array.from({ length: first + config.batchSize }, () => weightedTask(tasks, taskRng));
  // One stream per task: drawing further (a later round) keeps the draws before it (sampleSegments is a
  // partial Fisher-Yates, prefix-stable in its count).
  const queues = new Map<SpellTask, Cluster[]>(
    tasks.map((t) => {
      const drawn = sampleSegments(
        t.clusters,
        drawnTasks.filter((d) => d === t.task).length,
        seededRng(config.seed, iteration, 'plan', t.task),
      );
      return [t.task, drawn.slice(drawnTasks.slice(0, first).filter((d) => d === t.task).length)];
    }),
  );
  return drawnTasks.slice(first).map((task, k): Planned => {
    const i = first + k;
    const cluster = queues.get(task)?.shift();
    if (!cluster) throw new Error(`plan: no cluster drawn for item ${i} (${task})`);
    // A run resumed with a smaller L sees only the newest L entries.
    const shown =
      p.historySize > 0 ? (state.history[historyKey(task, cluster.id)] ?? []).slice(-p.historySize) : [];
    const unitRng = seededRng(config.seed, iteration, 'context', i);
    return {
      cluster: cluster.id,
      task,
      documents: cluster.documents,
      questionerDocs: questionerDocuments(cluster.documents, shown, p.newDocuments, unitRng),
      examples: shown.map(({ question, answer }) => ({ question, answer })),
      ...(task === 'multiple_choice' ? { targetLetter: unitRng.pick(LETTERS) } : {}),
    };
  });
}

function weightedTask(tasks: ReadonlyArray<{ task: SpellTask; weight: number }>, rng: Rng): SpellTask {
  const total = tasks.reduce((s, t) => s + t.weight, 0);
  let u = rng.next() * total;
  for (const t of tasks) {
    u -= t.weight;
    if (u < 0) return t.task;
  }
  return (tasks.at(-1) as { task: SpellTask }).task;
}
