import { extractLastBoxed } from '../scoring/boxed';
import { extractAnswer } from '../recipes/spell/parse';
import type { AnswerFormat } from '../../config/evaluation';
import { isParsableMath, numericValue } from '../scoring/math-equivalence';
import type { AnswerKind } from '../scoring/verifiers';
import type { AnswerChecker } from '../scoring/answer-checker-pool';
import type { BenchmarkResult } from '../../contracts/evaluation';

/**
 * Held-out scoring: each sample's verdict by the judge stages' answer checker (the last `\boxed{}` of the
 * completion against the gold answer, by the gold's kind, in the checker pool under its time limit), and a
 * benchmark's accuracy, pass@k and maj@k over the items' samples (pure, so every number is tested on its own).
 */

/** What a sample is judged against. */
export interface GoldAnswer {
  answer: string;
  kind: AnswerKind;
}

export interface SampleVerdict {
  /** The completion's answer (`extractSampleAnswer`); null when there is none (a wrong answer). */
  extracted: string | null;
  correct: boolean;
}

/**
 * The verifier for a gold answer: a single capital letter is an MCQ choice, a number compares by value, a
 * formula (digits or operators that parse as math) by mathematical equivalence, anything else as a
 * normalised string.
 */
export function answerKindOf(gold: string): AnswerKind {
  const g = gold.trim();
  if (/^\(?[A-J]\)?$/.test(g)) return 'mcq';
  if (numericValue(g) !== undefined) return 'integer';
  if (/[\d^*/+=\\()-]/.test(g) && isParsableMath(g)) return 'expression';
  return 'string';
}

/** A sample's answer as `format` reads it; null when it has none. */
export function extractSampleAnswer(completion: string, format: AnswerFormat = 'boxed'): string | null {
  return format === 'answer_is' ? extractAnswer(completion) : (extractLastBoxed(completion) ?? null);
}

/** One sample's verdict, on its answer as `format` reads it; a check that times out counts as wrong. */
export function judgeSample(
  gold: GoldAnswer,
  completion: string,
  check: AnswerChecker,
  format: AnswerFormat = 'boxed',
): Promise<SampleVerdict> {
  return judgeAnswer(gold, extractSampleAnswer(completion, format), check);
}

/** The verdict on an answer already taken from its sample (null: the sample gave none, which is wrong). */
export async function judgeAnswer(
  gold: GoldAnswer,
  extracted: string | null,
  check: AnswerChecker,
): Promise<SampleVerdict> {
  if (extracted === null) return { extracted, correct: false };
  const { verdict } = await check({ kind: gold.kind, predicted: extracted, gold: gold.answer });
  return { extracted, correct: verdict === 'equivalent' };
}

/**
 * The unbiased pass@k estimate from n samples of which c are correct (Chen et al. 2021):
 * 1 − C(n−c, k) / C(n, k), computed as a product so large n does not overflow.
 */
export function passAtK(n: number, c: number, k: number): number {
  if (
    !(Number.isInteger(n) && Number.isInteger(c) && Number.isInteger(k)) ||
    k < 1 ||
    k > n ||
    c < 0 ||
    c > n
  )
    throw new RangeError(`pass@k needs integers 0 ≤ c ≤ n and 1 ≤ k ≤ n, got n=${n}, c=${c}, k=${k}`);
  if (n - c < k) return 1;
  let allWrong = 1;
  for (let i = n - c + 1; i <= n; i++) allWrong *= 1 - k / i;
  return 1 - allWrong;
}

/**
 * Whether the majority vote of the samples is right. The correct samples are all equivalent to the gold, so
 * they vote together; the wrong ones vote by their answer's exact text (whitespace trimmed); samples without
 * an answer do not vote. A tie goes to the group that appeared first. Grouping by the verdicts already given
 * asks the checker nothing more, so maj@k stays within the per-answer time limit; two differently written
 * wrong answers that are equivalent count as two groups, which can only lower maj@k, never raise it.
 */
export function majorityCorrect(samples: readonly SampleVerdict[]): boolean {
  const groups: Array<{ key: string; votes: number }> = [];
  for (const s of samples) {
    if (s.extracted === null) continue;
    const key = s.correct ? '\u0000correct' : s.extracted.trim();
    const group = groups.find((g) => g.key === key);
    if (group) group.votes++;
    else groups.push({ key, votes: 1 });
  }
  // Groups are in order of first appearance and the comparison is strict: the earliest wins a tie.
  const best = groups.reduce<(typeof groups)[number] | undefined>(
    (top, g) => (top === undefined || g.votes > top.votes ? g : top),
    undefined,
  );
  return best?.key === '\u0000correct';
}

/** The k for which pass@k and maj@k are reported with n samples: 1, 2, 4, ... below n, and n (none when n = 1). */
export function reportedKs(n: number): number[] {
  if (n <= 1) return [];
  const ks: number[] = [];
  for (let k = 1; k < n; k *= 2) ks.push(k);
  return [...ks, n];
}

/** One item's samples, in sample order. */
export interface ScoredItem extends GoldAnswer {
  samples: readonly SampleVerdict[];
}

/** The scores of one benchmark (the numbers of its BenchmarkResult). */
export type BenchmarkScore = Omit<BenchmarkResult, 'format' | 'reusedItems' | 'resultsKey'>;

/**
 * The standard error of the accuracy as an estimate of the mean correctness on these items, from the spread of
 * each item's samples: sqrt(Σ s_i² / n) / N, with s_i² the unbiased variance of item i's n verdicts. It is the
 * noise of one evaluation of a version (what two evaluations of the same weights would differ by), not the
 * spread over other items. With one sample per item the items' own spread stands in for it (the binomial
 * error, larger).
 */
export function samplingError(correct: readonly number[], n: number): number {
  const items = correct.length;
  if (items === 0 || n === 0) return 0;
  if (n === 1) {
    const p = correct.reduce((a, b) => a + b, 0) / items;
    return Math.sqrt((p * (1 - p)) / items);
  }
  const variances = correct.map((c) => ((c / n) * (1 - c / n) * n) / (n - 1));
  return Math.sqrt(variances.reduce((a, b) => a + b, 0) / n) / items;
}

/** A benchmark's scores; every item must have the same number of samples. An empty benchmark scores 0. */
export function benchmarkScore(items: readonly ScoredItem[]): BenchmarkScore {
  const n = items[0]?.samples.length ?? 0;
  const uneven = items.findIndex((item) => item.samples.length !== n);
  if (uneven >= 0)
    throw new Error(`item ${uneven} has ${items[uneven]?.samples.length} samples, the first has ${n}`);
  const mean = (values: number[]): number =>
    values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0;
  const correct = items.map((item) => item.samples.filter((s) => s.correct).length);
  const ks = reportedKs(n);
  return {
    items: items.length,
    n,
    accuracy: mean(correct.map((c) => c / n)),
    standardError: samplingError(correct, n),
    passAtK: Object.fromEntries(ks.map((k) => [String(k), mean(correct.map((c) => passAtK(n, c, k)))])),
    majAtK: Object.fromEntries(
      ks.map((k) => [
        String(k),
        mean(items.map((item) => (majorityCorrect(item.samples.slice(0, k)) ? 1 : 0))),
      ]),
    ),
    noAnswer: mean(items.flatMap((item) => item.samples.map((s) => (s.extracted === null ? 1 : 0)))),
  };
}
