/**
 * The toy world: a small, seeded setting in which a model built from scratch on a CPU can be seen to learn by
 * self-play. It follows SPICE's information asymmetry exactly. Each document is a depot log that states four
 * counts and three of their sums ("North and south hold 85 crates"); a Challenger that reads it can write a
 * question whose answer it copies from the text ("What is 37 + 48?", 85), while the Reasoner, who never sees
 * the document, has to compute the sum. The three sums are of graded difficulty for a small transformer:
 * one digit plus one digit, two digits plus one, and two plus two, so which kind a Challenger prefers shows
 * whether its tasks drift toward the Reasoner's frontier.
 *
 * Why a generator of our own rather than a task library (reasoning-gym was considered): the warm-start data
 * has to be rendered by the recipe's own prompt code (so sampling and training see byte-identical prompts,
 * and a template drift shows up as a failed test, not as a silently worse model), the answers must be
 * checkable by the project's verifiers, and the whole world is forty lines of deterministic arithmetic.
 *
 * Everything is derived from `(seed, part, index)` through the project's seeded streams, so the same seed
 * gives byte-identical files on every machine.
 */
import type { ChatMessage } from '../../activities/clients/trainer-contract';
import { seededRng, type Rng } from '../../activities/lib/rng';
import {
  freeFormChallengerMessages,
  reasonerMessages,
  typeSelectionMessages,
} from '../../activities/recipes/spice/prompts';

/** The three question kinds, from easiest to hardest for the Reasoner. */
export const SUM_KINDS = ['one_plus_one', 'two_plus_one', 'two_plus_two'] as const;
export type SumKind = (typeof SUM_KINDS)[number];

export interface DepotLog {
  id: string;
  text: string;
  /** The document's sums, one per kind, as `[a, b]` with `a + b` stated in the text. */
  sums: Record<SumKind, [number, number]>;
}

export interface SumTask {
  kind: SumKind;
  operands: [number, number];
  question: string;
  answer: number;
}

/** One supervised example: the prompt as the recipe renders it and the completion to imitate. */
export interface WarmStartExample {
  messages: ChatMessage[];
  completion: string;
  /** challenger, reasoner or type_selection: lets the warm start report its loss per role. */
  role: string;
}

/** Operands `[a, b]` of a sum of `kind`, each kind with a fixed count of digits in `a`, `b` and `a + b`. */
function operands(rng: Rng, kind: SumKind): [number, number] {
  const digit = (): number => 1 + rng.int(9);
  const twoDigits = (): number => 10 + rng.int(90);
  for (;;) {
    const [a, b] =
      kind === 'one_plus_one'
        ? [digit(), digit()]
        : [twoDigits(), kind === 'two_plus_one' ? digit() : twoDigits()];
    const sumDigits = String(a + b).length;
    if (sumDigits === SUM_DIGITS[kind]) return [a, b];
  }
}

/** Digits of each kind's sum: 1+1 always carries (10..18), 2+1 never leaves two digits, 2+2 always reaches three. */
const SUM_DIGITS: Record<SumKind, number> = { one_plus_one: 2, two_plus_one: 2, two_plus_two: 3 };

export function sumQuestion(a: number, b: number): string {
  return `What is ${a} + ${b}?`;
}

export function taskOf(kind: SumKind, [a, b]: [number, number]): SumTask {
  return { kind, operands: [a, b], question: sumQuestion(a, b), answer: a + b };
}

/**
 * Document `index` of the corpus made with `seed`: a tally of three rows, one sum of each kind in a fixed
 * order. Every document has the same token layout (each kind fixes the digits of its operands and of its sum),
 * so a number the Challenger copies sits at the same distance before its answer in every prompt: a model of two
 * layers learns that copy in minutes, where a copy it must find by content (numbers anywhere in a free-form
 * log) it had not learned after twice as long (docs/learning.md).
 */
export function depotLog(seed: number, index: number): DepotLog {
  const rng = seededRng(seed, 'toy-world', 'document', index);
  const sums = Object.fromEntries(SUM_KINDS.map((kind) => [kind, operands(rng, kind)])) as DepotLog['sums'];
  const rows = SUM_KINDS.map((kind, i) => {
    const [a, b] = sums[kind];
    return `Row ${i + 1}: ${a} + ${b} = ${a + b}.`;
  });
  return { id: `depot-${String(index).padStart(6, '0')}`, text: ['Depot tally.', ...rows].join(' '), sums };
}

/** The corpus: `{"id","text"}` objects for the run's `corpus.uri`. */
export function corpus(seed: number, documents: number): Array<{ id: string; text: string }> {
  return Array.from({ length: documents }, (_, i) => {
    const { id, text } = depotLog(seed, i);
    return { id, text };
  });
}

/** `items` sums from the seeded stream `stream`, the kinds in turn (an equal share of each). */
export function sumTasks(seed: number, stream: string, items: number): SumTask[] {
  return Array.from({ length: items }, (_, i) => {
    const rng = seededRng(seed, 'toy-world', stream, i);
    const kind = SUM_KINDS[i % SUM_KINDS.length] as SumKind;
    return taskOf(kind, operands(rng, kind));
  });
}

/**
 * The held-out set in GSM8K's format (`question`, and `answer` ending in `#### N`), an equal share of each
 * kind, drawn from its own stream so it shares no choice with the corpus or the warm-start data.
 */
export function heldOut(
  seed: number,
  items: number,
): Array<{ id: string; question: string; answer: string }> {
  return sumTasks(seed, 'held-out', items).map((task, i) => ({
    id: `heldout-${i}`,
    question: task.question,
    answer: `${task.operands.join(' + ')} = ${task.answer}\n#### ${task.answer}`,
  }));
}

/** The kind of the sum a text asks for (`What is 37 + 48?`), by the digits of its operands. */
export function sumKindOf(text: string): SumKind | undefined {
  const match = /What is (\d{1,2}) \+ (\d{1,2})\?/.exec(text);
  if (!match) return undefined;
  const digits = [match[1], match[2]].map((n) => (n as string).length).sort();
  if (digits[1] === 1) return 'one_plus_one';
  return digits[0] === 1 ? 'two_plus_one' : 'two_plus_two';
}

/** What a competent Challenger writes for one task (SPICE's free-form format, Integer answer). */
export function challengerCompletion(task: SumTask): string {
  return JSON.stringify({ question: task.question, answer: task.answer, answer_type: 'Integer' });
}

/** What a Reasoner writes when it answers `answer`. */
export function reasonerCompletion(answer: number): string {
  return `\\boxed{${answer}}`;
}

/**
 * The share of the warm start's Reasoner examples whose answer is a near miss (off by one or by ten, the
 * slips of a carry). The model then learns a spread-out answer distribution: its most likely answer is right
 * more often than a sample of it (greedy 69 % against 45 % sampled, measured), the gap between pass@1 and
 * greedy accuracy that RL on verifiable rewards closes first in real models. Without the gap this model gains
 * about 3 held-out points in 200 RL steps on ideal tasks, since what it lacks is the sums themselves; with it,
 * 13 points in 40 steps and 19 in 200 (`npm run bench -- reasoner-ceiling`, docs/learning.md).
 */
export const REASONER_NEAR_MISS_RATE = 0.3;

/** `answer`, or with probability `rate` a near miss of it (never below 1). */
function teacherAnswer(rng: Rng, answer: number, rate: number): number {
  if (rng.next() >= rate) return answer;
  const missed = answer + rng.pick([-10, -1, 1, 10]);
  return missed >= 1 ? missed : answer + 1;
}

/** The type-selection helper's answer for every depot log: a free-form Integer question. */
export const TYPE_SELECTION_COMPLETION = JSON.stringify({
  suitable_for_mcq: false,
  suitable_for_free_form: true,
  best_answer_type: 'Integer',
  reason: 'the counts and their sums give integer answers',
});

/**
 * Supervised warm-start examples, rendered by SPICE's prompt functions: per document, the type selection,
 * one Challenger task of a uniformly chosen kind (so the warm start has no preference a Challenger could
 * only learn by RL), and Reasoner answers to sums of every kind from a teacher that slips now and then
 * (`REASONER_NEAR_MISS_RATE`). The documents come from a stream of their own (`warm-start`), not from the
 * run's corpus.
 */
export function warmStartExamples(seed: number, documents: number): WarmStartExample[] {
  const out: WarmStartExample[] = [];
  for (let i = 0; i < documents; i++) {
    const doc = depotLog(seed + 1_000_003, i);
    const rng = seededRng(seed, 'toy-world', 'warm-start', i);
    const kind = rng.pick(SUM_KINDS);
    if (i % 8 === 0) {
      out.push({
        messages: typeSelectionMessages(doc.text),
        completion: TYPE_SELECTION_COMPLETION,
        role: 'type_selection',
      });
    }
    out.push({
      messages: freeFormChallengerMessages(doc.text, 'Integer'),
      completion: challengerCompletion(taskOf(kind, doc.sums[kind])),
      role: 'challenger',
    });
    for (const k of SUM_KINDS) {
      const task = taskOf(k, operands(rng, k));
      out.push({
        messages: reasonerMessages(task.question, 'qwen'),
        completion: reasonerCompletion(teacherAnswer(rng, task.answer, REASONER_NEAR_MISS_RATE)),
        role: 'reasoner',
      });
    }
  }
  return out;
}
