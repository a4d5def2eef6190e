/**
 * The toy world: a small, seeded setting in which a model built from scratch on a CPU can be seen to learn by
 * self-play. It follows SPICE's information asymmetry exactly. Each document is a tally that states one
 * addition fact, written as a sum or as a difference ("Row 1: 52 - 5 = 47."); a Challenger that reads it can
 * write a question whose answer it copies from the text, the sum ("What is 47 + 5?", 52) or the difference
 * ("What is 52 - 5?", 47), while the Reasoner, who never sees the document, has to compute it.
 *
 * The questions are the rungs of a ladder of difficulty for the Reasoner (`RUNGS`): addition without a carry,
 * subtraction without a borrow, addition with a carry, subtraction with a borrow. A document offers two
 * neighbouring rungs (the sum and the difference of its fact: `add` and `sub`, or `add_carry` and
 * `sub_borrow`), and the Challenger chooses between them. Difficulty is graded on the Reasoner's side only:
 * every row has the same token layout (two digits, an operator, one digit, two digits), and a fact is written
 * as a sum or as a difference equally often, so each question is a copy in the written order half the time
 * and a reordered copy the other half, whatever its rung: validity does not choose the rung, and which rung a
 * Challenger prefers shows whether its tasks follow the Reasoner's frontier.
 *
 * Why one fact per document: with four rows of one layout, the two-layer model barely learned to copy a whole
 * row in 1,500 to 2,900 Challenger batches (at most 3 % of samples at the learning rates, widths and depths
 * tried; which row a copied digit came from is ambiguous), while it copies the single row of a document in
 * 1,000 (measured, docs/learning.md). Two rows, one with a carry and one without (so that every document
 * offered all four rungs), were no better: 9 % greedy and 2 % sampled copies after 3,000 warm-start steps,
 * against 39 % and 27 % for one row.
 *
 * Why nine documents in ten hold a carry (`CARRY_DOCUMENT_SHARE`): a document offers only its own fact's rungs,
 * and SPICE's Challenger is rewarded most for tasks the Reasoner solves half the time, which the carry rungs are
 * at the start and the no-carry rungs soon are not. With one document in two, the Challenger spent half its
 * documents on the no-carry rungs and the carry rungs, half the held-out set, got few of the Reasoner's steps
 * (+6.2 points over 40 iterations, warm-start seed 0). With two in three the gain was +14.7, but late in a run the
 * no-carry documents had no task left near one half, and the Reasoner's mean pass rate on the Challenger's
 * tasks left SPICE's band (73-79 % over five iterations); with nine in ten it stayed within 50-70 % on three
 * warm-start seeds (measured, docs/learning.md). The no-carry documents that remain still show the Challenger
 * leaving the rung the Reasoner masters first.
 *
 * Held-out questions are about addition facts that nothing else in the world states (`isHeldOutFact`): no
 * document, no warm-start example and no task a Challenger can build from a document's numbers names one, so
 * held-out accuracy measures arithmetic the model computes, not sums it has seen.
 *
 * Why a generator of our own rather than a task library (reasoning-gym was considered): the warm-start data
 * has to be rendered by the recipe's own prompt code (so sampling and training see byte-identical prompts,
 * and a template drift shows up as a failed test, not as a silently worse model), the answers must be
 * checkable by the project's verifiers, and the whole world is a page of deterministic arithmetic.
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

/** The ladder's rungs, from easiest to hardest for the Reasoner. */
export const RUNGS = ['add', 'sub', 'add_carry', 'sub_borrow'] as const;
export type Rung = (typeof RUNGS)[number];

/**
 * The share of the warm start's Reasoner answers that are near misses (off by one or by ten, the slips of a
 * carry), per rung. The model learns the arithmetic of every rung but, from the slips, a spread-out answer
 * distribution whose mode is right: its greedy answer is mostly right, its samples far less on the higher
 * rungs. That gap between greedy and sampled accuracy is what RL on verifiable rewards closes first in real
 * models; graded per rung, it makes the ladder the Challenger climbs, and since the mode stays right on every
 * rung, RL can move each one. The top rung slips 75 % of the time: the warm-started Reasoner samples it right
 * about 40 % of the time (validation, seeds 0-2), still the rung that RL moves least within a run, so the
 * Challenger keeps a task near one half to ask while the Reasoner masters the others. At 65 % the Reasoner's
 * mean pass rate on the Challenger's tasks left SPICE's band (five-iteration means up to 73-79 %).
 */
export const SLIP_RATE: Record<Rung, number> = { add: 0.05, sub: 0.35, add_carry: 0.5, sub_borrow: 0.75 };

/**
 * The other rung of a document that offers `rung`: a document's fact gives its sum and its difference, both
 * with a carry or both without, so a Challenger that reads it chooses between these two.
 */
export const PARTNER_RUNG: Record<Rung, Rung> = {
  add: 'sub',
  sub: 'add',
  add_carry: 'sub_borrow',
  sub_borrow: 'add_carry',
};

/** The share of documents whose fact has a carry (their rungs are `add_carry` and `sub_borrow`). */
export const CARRY_DOCUMENT_SHARE = 9 / 10;

/** The share of addition facts reserved for the held-out set. */
export const HELD_OUT_FACT_SHARE = 1 / 4;

/** An addition fact `x + y = z`, `y` of one digit: the form of every row and question of the world. */
export interface Fact {
  x: number;
  y: number;
  z: number;
}

export interface DepotLog {
  id: string;
  text: string;
  /** The two tasks the document's fact allows: its sum and its difference. */
  tasks: [SumTask, SumTask];
}

export interface SumTask {
  rung: Rung;
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

/** Whether `x + y` carries (the ones digits sum to ten or more). */
export const carries = (x: number, y: number): boolean => (x % 10) + (y % 10) >= 10;

/**
 * Whether the fact `{x, y}` belongs to the held-out set: a fixed share of facts, chosen by a hash of the
 * unordered pair and independent of the world's seed, so every world holds out the same facts and a question
 * and its rewrites (`y + x`, `z - x`, `z - y`) are held out together.
 */
export function isHeldOutFact(x: number, y: number): boolean {
  const [a, b] = x <= y ? [x, y] : [y, x];
  return seededRng('toy-world', 'held-out-fact', a, b).next() < HELD_OUT_FACT_SHARE;
}

/**
 * A fact for `rung`, `x` of two digits, `y` of one and `z` of two, drawn from the held-out facts or from the
 * others. Two digits and one is the size of sum a two-layer model learns from a few thousand examples
 * (measured: two digits and two, with every rung's carries and borrows, were still at 10 % after 1,000
 * Reasoner batches, docs/learning.md).
 */
export function drawFact(rng: Rng, rung: Rung, heldOut: boolean): Fact {
  const carry = rung === 'add_carry' || rung === 'sub_borrow';
  for (;;) {
    const x = 10 + rng.int(89);
    const y = 1 + rng.int(9);
    if (x + y <= 99 && carries(x, y) === carry && isHeldOutFact(x, y) === heldOut) return { x, y, z: x + y };
  }
}

/** The question a rung asks about a fact: its sum, or its difference `z - y`. */
export function taskOf(rung: Rung, { x, y, z }: Fact): SumTask {
  const subtracts = rung === 'sub' || rung === 'sub_borrow';
  const question = subtracts ? `What is ${z} - ${y}?` : `What is ${x} + ${y}?`;
  return { rung, question, answer: subtracts ? x : z };
}

const rowText = (task: SumTask): string =>
  `${task.question.replace(/^What is (.*)\?$/, '$1')} = ${task.answer}`;

/**
 * Every addition fact among a document's numbers (`p + q = r`, all three stated in it), rows and
 * recombinations across rows alike: what a Challenger that copies numbers from the text can ask about.
 */
export function factsStatedIn(text: string): Fact[] {
  const numbers = [...new Set((text.match(/\d+/g) ?? []).map(Number))];
  const stated = new Set(numbers);
  return numbers.flatMap((x) =>
    numbers.filter((y) => y < 10 && x >= 10 && stated.has(x + y)).map((y) => ({ x, y, z: x + y })),
  );
}

/**
 * Document `index` of the corpus made with `seed`: one fact, with a carry (`CARRY_DOCUMENT_SHARE`) or without,
 * written as its sum or its difference (one in two).
 */
export function depotLog(seed: number, index: number): DepotLog {
  const rng = seededRng(seed, 'toy-world', 'document', index);
  const carry = rng.next() < CARRY_DOCUMENT_SHARE;
  const fact = drawFact(rng, carry ? 'add_carry' : 'add', false);
  const tasks: [SumTask, SumTask] = carry
    ? [taskOf('add_carry', fact), taskOf('sub_borrow', fact)]
    : [taskOf('add', fact), taskOf('sub', fact)];
  const written = rng.pick(tasks);
  return {
    id: `depot-${String(index).padStart(6, '0')}`,
    text: `Tally. Row 1: ${rowText(written)}.`,
    tasks,
  };
}

/** The corpus: `{"id","text"}` objects for the run's `corpus.uri`. */
export function corpus(seed: number, documents: number): Array<{ id: string; text: string }> {
  return Array.from({ length: documents }, (_, i) => {
    const { id, text } = depotLog(seed, i);
    return { id, text };
  });
}

/**
 * `items` tasks from the seeded stream `stream`, the rungs in turn (an equal share of each), about held-out
 * facts or about the others. Held-out tasks are distinct (a stream of them has no repeated question).
 */
export function sumTasks(seed: number, stream: string, items: number, heldOut = false): SumTask[] {
  const seen = new Set<string>();
  const out: SumTask[] = [];
  for (let i = 0; out.length < items; i++) {
    const rung = RUNGS[out.length % RUNGS.length] as Rung;
    const task = taskOf(rung, drawFact(seededRng(seed, 'toy-world', stream, i), rung, heldOut));
    if (heldOut && seen.has(task.question)) continue;
    seen.add(task.question);
    out.push(task);
  }
  return out;
}

/**
 * The held-out set in GSM8K's format (`question`, and `answer` ending in `#### N`), an equal share of each
 * rung, every question about a held-out fact (`isHeldOutFact`).
 */
export function heldOut(
  seed: number,
  items: number,
): Array<{ id: string; question: string; answer: string }> {
  return sumTasks(seed, 'held-out', items, true).map((task, i) => ({
    id: `heldout-${i}`,
    question: task.question,
    answer: `${rowText(task)}\n#### ${task.answer}`,
  }));
}

/** The rung of the question a text asks (`What is 52 - 5?`): two digits and one, with a two-digit result. */
export function rungOf(text: string): Rung | undefined {
  const match = /What is (\d{2}) ([+-]) (\d)\?/.exec(text);
  if (!match) return undefined;
  const [a, b] = [Number(match[1]), Number(match[3])];
  if (match[2] === '+') {
    if (a + b > 99) return undefined;
    return carries(a, b) ? 'add_carry' : 'add';
  }
  if (a - b < 10) return undefined;
  return carries(a - b, b) ? 'sub_borrow' : 'sub';
}

/** What a competent Challenger writes for one task (SPICE's free-form format, Integer answer). */
export function challengerCompletion(task: SumTask): string {
  return JSON.stringify({ question: task.question, answer: task.answer, answer_type: 'Integer' });
}

/** What a Reasoner writes when it answers `answer`. */
export function reasonerCompletion(answer: number): string {
  return `\\boxed{${answer}}`;
}

/** `answer`, or with probability `rate` a near miss of it. */
export function teacherAnswer(rng: Rng, answer: number, rate: number): number {
  return rng.next() < rate ? answer + rng.pick([-10, -1, 1, 10]) : answer;
}

/** The type-selection helper's answer for every tally: a free-form Integer question. */
export const TYPE_SELECTION_COMPLETION = JSON.stringify({
  suitable_for_mcq: false,
  suitable_for_free_form: true,
  best_answer_type: 'Integer',
  reason: 'the rows state integer sums and differences',
});

/**
 * Supervised warm-start examples, rendered by SPICE's prompt functions: per document, the type selection now
 * and then, one Challenger task, the document's sum or difference chosen uniformly (so the warm start has no
 * preference a Challenger could only learn by RL), and one Reasoner answer per rung from a teacher that slips at the rung's
 * rate (`SLIP_RATE`). The documents come from a stream of their own, not from the run's corpus, and no
 * example names a held-out fact.
 */
export function warmStartExamples(seed: number, documents: number): WarmStartExample[] {
  const out: WarmStartExample[] = [];
  for (let i = 0; i < documents; i++) {
    const doc = depotLog(seed + 1_000_003, i);
    const rng = seededRng(seed, 'toy-world', 'warm-start', i);
    if (i % 8 === 0) {
      out.push({
        messages: typeSelectionMessages(doc.text),
        completion: TYPE_SELECTION_COMPLETION,
        role: 'type_selection',
      });
    }
    out.push({
      messages: freeFormChallengerMessages(doc.text, 'Integer'),
      completion: challengerCompletion(rng.pick(doc.tasks)),
      role: 'challenger',
    });
    for (const rung of RUNGS) {
      const task = taskOf(rung, drawFact(rng, rung, false));
      out.push({
        messages: reasonerMessages(task.question, 'qwen'),
        completion: reasonerCompletion(teacherAnswer(rng, task.answer, SLIP_RATE[rung])),
        role: 'reasoner',
      });
    }
  }
  return out;
}

/** One validation example for the warm start: a prompt and the completions that count as right. */
export interface ValidationExample {
  messages: ChatMessage[];
  role: string;
  kind: string;
  accept: string[];
}

/**
 * What the warm start scores as it trains (greedy and sampled): Reasoner questions of every rung about
 * training facts, and Challenger prompts whose right completions are their document's sum or difference. Drawn from
 * streams of their own, so they say how the warm start generalises without touching the held-out facts.
 */
export function validationExamples(seed: number, reasonerItems = 200, documents = 64): ValidationExample[] {
  const reasoner = sumTasks(seed, 'validation', reasonerItems).map((task) => ({
    messages: reasonerMessages(task.question, 'qwen'),
    role: 'reasoner',
    kind: task.rung,
    accept: [reasonerCompletion(task.answer)],
  }));
  const challenger = Array.from({ length: documents }, (_, i) => depotLog(seed + 2_000_003, i)).map(
    (doc) => ({
      messages: freeFormChallengerMessages(doc.text, 'Integer'),
      role: 'challenger',
      kind: 'copy',
      accept: doc.tasks.map(challengerCompletion),
    }),
  );
  return [...reasoner, ...challenger];
}
