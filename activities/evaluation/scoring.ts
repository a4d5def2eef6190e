import { extractLastBoxed } from '../scoring/boxed';
import { isParsableMath, numericValue } from '../scoring/math-equivalence';
import { verifyAnswer, type AnswerKind } from '../scoring/verifiers';
import type { BenchmarkResult } from '../../workflows/evaluation-contracts';

/**
 * Held-out scoring as data: each sample's verdict by the recipes' rule verifiers (the last `\boxed{}` of the
 * completion against the gold answer, by the gold's kind), and a benchmark's accuracy, pass@k and maj@k over
 * the items' samples. Pure, so every number is tested on its own.
 */

/** What a sample is judged against. */
export interface GoldAnswer {
  answer: string;
  kind: AnswerKind;
}

export interface SampleVerdict {
  /** The last `\boxed{}` of the completion; null when there is none (a wrong answer). */
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

export function judgeSample(gold: GoldAnswer, completion: string): SampleVerdict {
  const extracted = extractLastBoxed(completion) ?? null;
  return { extracted, correct: extracted !== null && verifyAnswer(gold.kind, extracted, gold.answer) };
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
 * The majority answer among samples: answers the verifier finds equivalent (as it would compare one with a
 * gold answer of that kind) vote together; samples without an answer do not vote. A tie goes to the answer
 * that appeared first. Undefined when no sample has an answer.
 */
export function majorityAnswer(kind: AnswerKind, answers: readonly (string | null)[]): string | undefined {
  const groups: Array<{ answer: string; votes: number }> = [];
  for (const answer of answers) {
    if (answer === null) continue;
    const group =
      groups.find((g) => g.answer === answer) ?? groups.find((g) => verifyAnswer(kind, answer, g.answer));
    if (group) group.votes++;
    else groups.push({ answer, votes: 1 });
  }
  // Groups are in order of first appearance and the comparison is strict: the earliest wins a tie.
  return groups.reduce<(typeof groups)[number] | undefined>(
    (best, g) => (best === undefined || g.votes > best.votes ? g : best),
    undefined,
  )?.answer;
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
    passAtK: Object.fromEntries(ks.map((k) => [String(k), mean(correct.map((c) => passAtK(n, c, k)))])),
    majAtK: Object.fromEntries(
      ks.map((k) => [
        String(k),
        mean(
          items.map((item) => {
            const answers = item.samples.slice(0, k).map((s) => s.extracted);
            const majority = majorityAnswer(item.kind, answers);
            return majority !== undefined && verifyAnswer(item.kind, majority, item.answer) ? 1 : 0;
          }),
        ),
      ]),
    ),
    noAnswer: mean(items.flatMap((item) => item.samples.map((s) => (s.extracted === null ? 1 : 0)))),
  };
}
