/**
 * A toy-world run read back from its manifests and batches as a learning curve: the held-out accuracy its
 * evaluation committed at version 0 and after the evaluated steps, with the valid-task rate, the mean rewards
 * and what each role trained, per iteration, and what a world reads besides (`PointReader`: for SPICE's
 * world the Reasoner's pass rates and the rungs of the Challenger's valid tasks, `spicePoint`). Shared by the
 * learning tests, their controls and `npm run bench -- learning`.
 */
import { readFileSync } from 'node:fs';
import { getJson, getJsonl } from '../../activities/clients/storage/codec';
import { batchKey, manifestKey, shardKey } from '../../activities/clients/storage/keys';
import type { TrainingRow } from '../../activities/clients/trainer-contract';
import type { ItemVerdicts } from '../../activities/evaluation/evaluate';
import { openStore, type ObjectStore } from '../../activities/clients/storage';
import type { BenchmarkResult, EvalResult } from '../../contracts/evaluation';
import type { Manifest } from '../../contracts/selfplay';
import { TOY_WORLD_BENCHMARK } from './run-config';
import { rungOf, type Rung } from './world';

/** A held-out accuracy with the standard error of the evaluation that measured it. */
export interface Measured {
  accuracy: number;
  standardError: number;
  /** The accuracy per kind of held-out item, where a world tells kinds apart (SSP's: one hop or two). */
  byKind?: Record<string, number>;
}

/** What one role's rows did in an iteration's step (the kernel's per-role metrics). */
export interface RoleTraining {
  steps: number;
  tokens: number;
  gradNorm: number;
}

/** What every world's curve holds per iteration. */
export interface RunPoint {
  iteration: number;
  /** Held-out accuracy of the version this iteration committed, when the iteration evaluated it. */
  heldOut?: Measured;
  validTaskRate: number;
  meanRewardByRole: Record<string, number>;
  /** Per role, what its rows trained. */
  trained: Record<string, RoleTraining>;
  /** How many versions behind its base its rows were sampled (the manifest's `pipeline`): 0 when synchronous. */
  staleness: number;
}

/** SPICE's world, per iteration. */
export interface SpicePoint {
  /** passRateHistogram[k]: valid tasks whose G Reasoner answers had k correct. */
  passRateHistogram: number[];
  /** The Reasoner's mean pass rate over the Challenger's valid tasks (from the histogram). */
  meanPassRate: number;
  /** The Challenger's valid tasks per rung. */
  rungTasks: Partial<Record<Rung, number>>;
  /** Shares of the rungs among the Challenger's valid tasks. */
  rungShares: Partial<Record<Rung, number>>;
  /** The Reasoner's answers per rung and how many were right, over the task it answered for each document. */
  reasonerAnswers: Partial<Record<Rung, Tally>>;
  /** The Reasoner's pass rate per rung (`reasonerAnswers`' share right). */
  passRateByRung: Partial<Record<Rung, number>>;
}

/** How many of `total` were right. */
export interface Tally {
  right: number;
  total: number;
}

export type IterationPoint<W = SpicePoint> = RunPoint & W;

/** What a world reads of one iteration besides the run's own figures. */
export type PointReader<W> = (iteration: {
  store: ObjectStore;
  runId: string;
  iteration: number;
  manifest: Manifest;
  /** The rows the iteration trained the policy on. */
  rows: readonly TrainingRow[];
}) => Promise<W> | W;

export interface LearningCurve<W = SpicePoint> {
  runId: string;
  /** Held-out accuracy of the warm-started model (version 0). */
  start: Measured;
  points: Array<IterationPoint<W>>;
  /** The last evaluated iteration's held-out accuracy minus the start's, in percentage points. */
  gainPoints: number;
  /** The gain's standard error in points: both evaluations' errors (the start's included). */
  gainError: number;
}

/**
 * `afterRun`: an evaluation of the last committed version made after the run (a one-step-off run evaluates
 * nothing in-run, see runToyWorld), taken as its last iteration's held-out accuracy; `atStart`: one of
 * version 0 made after the run (a world's control that changes the evaluation's tool, see runToyWorld),
 * taken as the start's. `score` reads each evaluation's held-out figure (the benchmark's accuracy unless a
 * world grades its answers otherwise).
 */
export async function readLearningCurve<W>(
  storageUri: string,
  runId: string,
  iterations: number,
  read: PointReader<W>,
  afterRun?: EvalResult,
  atStart?: EvalResult,
  score: HeldOutScore = accuracyOf,
): Promise<LearningCurve<W>> {
  const store = openStore(storageUri);
  const points: Array<IterationPoint<W>> = [];
  const heldOutOf = async (result: BenchmarkResult | undefined): Promise<Measured | undefined> =>
    result && score(store, result);
  let start = await heldOutOf(atStart?.benchmarks[TOY_WORLD_BENCHMARK]);
  for (let iteration = 1; iteration <= iterations; iteration++) {
    const manifest = await getJson<Manifest>(store, manifestKey(runId, iteration));
    if (!manifest) throw new Error(`${runId}: iteration ${iteration} has no manifest`);
    const { recipe, eval: evaluated, evalAtStart, train } = manifest.metrics;
    start ??= await heldOutOf(evalAtStart?.benchmarks[TOY_WORLD_BENCHMARK]);
    // Every policy's rows (SCOPE's world trains two), and every policy's per-role metrics.
    const policies = Object.keys(manifest.policies);
    const rows = (
      await Promise.all(policies.map((p) => getJsonl<TrainingRow>(store, batchKey(runId, iteration, p))))
    ).flatMap((r) => r ?? []);
    const final = iteration === iterations ? afterRun : undefined;
    const heldOut = await heldOutOf((evaluated ?? final)?.benchmarks[TOY_WORLD_BENCHMARK]);
    points.push({
      iteration,
      ...(heldOut ? { heldOut } : {}),
      validTaskRate: recipe.validTaskRate,
      meanRewardByRole: recipe.meanRewardByRole,
      staleness: manifest.metrics.pipeline?.staleness ?? 0,
      trained: roleTraining(
        Object.assign({}, ...policies.map((p) => train[p] ?? {})) as Record<string, number>,
      ),
      ...(await read({ store, runId, iteration, manifest, rows })),
    });
  }
  if (start === undefined) throw new Error(`${runId}: no held-out accuracy at version 0`);
  const last = points.findLast((p) => p.heldOut)?.heldOut;
  if (last === undefined) throw new Error(`${runId}: no iteration evaluated the held-out set`);
  return {
    runId,
    start,
    points,
    gainPoints: 100 * (last.accuracy - start.accuracy),
    gainError: 100 * Math.hypot(last.standardError, start.standardError),
  };
}

/** A stage's records of every shard of the iteration, in shard order. */
export async function stageRecords<T>(
  store: ObjectStore,
  runId: string,
  iteration: number,
  stage: string,
): Promise<T[]> {
  const out: T[] = [];
  for (let shard = 0; ; shard++) {
    const records = await getJsonl<T>(store, shardKey(runId, iteration, stage, shard));
    if (records === undefined) return out;
    out.push(...records);
  }
}

/** SPICE's world: the Reasoner's pass rates, overall and by rung, and the rungs of the Challenger's valid tasks. */
export const spicePoint: PointReader<SpicePoint> = ({ manifest, rows }) => {
  const { passRateHistogram } = manifest.metrics.recipe;
  const rungTasks = validTasksByRung(rows);
  const total = Object.values(rungTasks).reduce((a, b) => a + b, 0);
  const reasonerAnswers = reasonerAnswersByRung(rows);
  return {
    passRateHistogram,
    meanPassRate: meanPassRate(passRateHistogram),
    rungTasks,
    rungShares: mapValues(rungTasks, (n) => n / total),
    reasonerAnswers,
    passRateByRung: mapValues(reasonerAnswers, (t) => t.right / t.total),
  };
};

const mapValues = <A, B>(record: Partial<Record<Rung, A>>, f: (a: A) => B): Partial<Record<Rung, B>> =>
  Object.fromEntries(Object.entries(record).map(([rung, a]) => [rung, f(a)]));

/**
 * A world's held-out figure of one evaluation: by default the benchmark's accuracy; SCOPE's world grades the
 * stored answers by its rubrics instead (scope-learning.ts).
 */
export type HeldOutScore = (store: ObjectStore, result: BenchmarkResult) => Promise<Measured> | Measured;

/** The objects of a world's JSONL file, one per non-empty line. */
export function readJsonlFile<T>(file: string): T[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

/** The held-out file's questions by item id (a world's `heldout.jsonl`, `{"id", "question"}` per line). */
export function heldOutQuestions(file: string): Map<string, string> {
  return new Map(
    readJsonlFile<{ id: string; question: string }>(file).map((item) => [item.id, item.question]),
  );
}

/** The per-item verdicts an evaluation stored (its samples' completions and correctness). */
export async function storedItems(store: ObjectStore, result: BenchmarkResult): Promise<ItemVerdicts[]> {
  const key = result.resultsKey;
  const items = key ? await getJsonl<ItemVerdicts>(store, key) : undefined;
  if (!items?.length) throw new Error(`the held-out evaluation stored no items (results key ${key})`);
  return items;
}

/** The mean of `xs`, 0 for none. */
export const mean = (xs: readonly number[]): number =>
  xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;

/** How often a judge's verdicts agreed with the true ones (or a rule's), of how many. */
export interface Agreement {
  /** Share of the verdicts that agreed. */
  rate: number;
  pairs: number;
}

export const agreement = (verdicts: ReadonlyArray<{ agrees: boolean }>): Agreement => ({
  rate: mean(verdicts.map((v) => Number(v.agrees))),
  pairs: verdicts.length,
});

const accuracyOf: HeldOutScore = (_store, result) => ({
  accuracy: result.accuracy,
  standardError: result.standardError ?? 0,
});

/** The mean pass rate over the tasks of a histogram (`histogram[k]`: tasks with k of G right). */
export function meanPassRate(histogram: readonly number[]): number {
  const g = histogram.length - 1;
  const tasks = histogram.reduce((a, b) => a + b, 0);
  return tasks && g > 0 ? histogram.reduce((sum, count, k) => sum + count * k, 0) / (tasks * g) : 0;
}

/**
 * The rungs of the Challenger's valid tasks. SPICE rewards a valid task in (0, 1] and an invalid one with
 * ρ < 0, so the reward tells them apart; an invalid row (a garbled copy of one rung can read as another) is
 * not counted.
 */
function validTasksByRung(rows: readonly TrainingRow[]): Partial<Record<Rung, number>> {
  const counts: Partial<Record<Rung, number>> = {};
  for (const row of rows) {
    const rung = row.role === 'challenger' && row.reward >= 0 ? rungOf(row.completion) : undefined;
    if (rung) counts[rung] = (counts[rung] ?? 0) + 1;
  }
  return counts;
}

/** The Reasoner's rows (one valid task per document, G answers each, reward 1 when right), by rung. */
function reasonerAnswersByRung(rows: readonly TrainingRow[]): Partial<Record<Rung, Tally>> {
  const tally: Partial<Record<Rung, Tally>> = {};
  for (const row of rows) {
    const rung = row.role === 'reasoner' ? rungOf(row.messages.at(-1)?.content ?? '') : undefined;
    if (!rung) continue;
    const t = (tally[rung] ??= { right: 0, total: 0 });
    t.right += row.reward > 0 ? 1 : 0;
    t.total += 1;
  }
  return tally;
}

/** Per role, its steps, loss tokens and gradient norm, from the step's flat metrics (`steps.{role}`, ...). */
function roleTraining(train: Record<string, number>): Record<string, RoleTraining> {
  const roles = Object.keys(train).flatMap((key) => (key.startsWith('steps.') ? [key.slice(6)] : []));
  return Object.fromEntries(
    roles.map((role) => [
      role,
      {
        steps: train[`steps.${role}`] ?? 0,
        tokens: train[`tokens.${role}`] ?? 0,
        gradNorm: train[`gradNorm.${role}`] ?? 0,
      },
    ]),
  );
}
