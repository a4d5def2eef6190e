/**
 * SPELL's toy world (v7): lookups over a cluster of fact sheets, played with SPELL's own prompts and parsers.
 * A cluster is two one-line sheets, each a depot's stock code: its number with the crates it holds written
 * right after it ("Depot 4752 crates." for Depot 47's 52 crates). The questioner reads one sheet of the
 * cluster, quotes it in its thinking and writes a question about that depot, its number in words, with its
 * answer (`<think>Depot 4752 crates.</think>{"question":"How many crates does Depot forty-seven
 * hold?","answer":52}`);
 * the responder answers it with the sheets in context, quoting the sheet it read ("Depot 4752 crates.
 * Therefore, the answer is 52."); the verifier, the same model, compares the responder's answer with the
 * reference digit by digit ("Explanation: 5 5 = 2 2 =. Decision: [[YES]]").
 *
 * Why this world: the numbers are only in the sheets, so the grounding probe (the responder without them)
 * cannot answer and every question needs its cluster; and what the responder does is a copy keyed by a name
 * (find the sheet of the question's depot, copy its number), which a two-layer model learns by induction:
 * the count's first digit follows the depot's last digit, and every digit of a cluster's sheets differs from
 * the others, so "the token after the one I just wrote" finds it. The question names the depot in words
 * (`spokenName`) so that its digits stand once in the responder's prompt: with the digits in the question too
 * (v4 to v6), the depot's last digit stood twice, followed by the count in its sheet and by " hold?" in the
 * question, and no warm start of v6 learned that first copy reliably (its count's first digit came from
 * either sheet, while the second, keyed by a digit that stands once, was right on 87 of 96; docs/learning.md).
 * v3 wrote "Depot 47 holds 52 crates.", three
 * sheets: " holds " preceded every count, and its responder copied the name but a count at random (18 %
 * greedy after 6,500 warm-start steps; docs/learning.md). The responder's teacher slips (another sheet's number, or off by one:
 * `RESPONDER_SLIPS`), so its greedy answers are right and its samples often not; the verifier's teacher
 * flips its decision (`VERIFIER_SLIP_RATE`), so both roles have headroom for RL.
 *
 * Held-out: clusters whose depots are held-out names (`isHeldOutName`): no corpus document, warm-start or
 * validation example names one. Held-out accuracy is the responder's on them, asked with SPELL's responder
 * prompt over the cluster.
 */
import type { ChatMessage } from '../../activities/clients/trainer-contract';
import { seededRng, type Rng } from '../../activities/lib/rng';
import {
  questionerMessages,
  responderMessages,
  verifierMessages,
} from '../../activities/recipes/spell/prompts';
import type { SpellQuestion } from '../../activities/recipes/spell/records';

/** The one task of the world: a numeric answer that SPELL's rule check compares by value. */
export const SPELL_WORLD_TASK = 'financial_math';

/**
 * A depot is named by a number of two digits (`Depot 47`): the warm start's tokenizer splits around digits
 * only and merges the rest, so a name of words fuses with the text around it ("crates.\nDepot Kilo Field
 * holds " one token in a sheet, "Kilo" "Fi" "el" "d" in the question; measured), while a digit is a token of
 * its own wherever it stands, in a sheet, a question or a held-out cluster. Names run from 21 to 98 without a
 * 0 or a repeated digit, so that each is said as a tens word and a units word (`spokenName`), no teens.
 */
const NAMES = Array.from({ length: 78 }, (_, i) => 21 + i).filter(
  (n) => n % 10 !== 0 && n % 10 !== Math.floor(n / 10),
);

const TENS = ['twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
const UNITS = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];

/** The name as a question says it, after "Depot": ` forty-seven` for 47. */
export const spokenName = (name: string): string =>
  ` ${TENS[Number(name.charAt(0)) - 2]}-${UNITS[Number(name.charAt(1)) - 1]}`;

/**
 * The words of `spokenName` as tokens of their own (the warm start's `--piece`): its BPE, which merges across
 * spaces and dashes, would otherwise fuse a number word with the text around it, and cut a held-out pair of
 * words as no trained name was cut. A units word carries the dash before it, so that none is found inside
 * another word of a prompt ("one" in "someone"); a tens word no space, which the verifier's template ends
 * with ("...does Depot ", one token).
 */
export const SPOKEN_NAME_PIECES = [...TENS, ...UNITS.map((u) => `-${u}`)];

/**
 * A depot is held out when the sum of its digits is 2 more than a multiple of 5 (`Depot 25`, `Depot 29`,
 * `Depot 34`, ...: a fifth of them): no corpus document, warm-start or validation example names one, and every
 * held-out cluster names only them. Every digit still stands in both places of a trained name: v4 held out
 * the names ending in 2 or 7, which the responder had never written last, and it copied "Depot 57" as
 * "Depot 50" or "Depot 58" (held-out accuracy 2-24 % at the start; measured).
 */
export function isHeldOutName(name: number): boolean {
  return (Math.floor(name / 10) + (name % 10)) % 5 === 2;
}

/** Fact sheets per cluster: the one the question names and another, whose count it could be confused with. */
export const SHEETS = 2;

/**
 * The responder's teacher slips this often: on `wrongSheet` of its answers it copies another sheet's number,
 * on `offByOne` the right sheet's number plus or minus one. Greedy answers stay right; samples are right
 * about 60 % of the time, which leaves RL its headroom.
 */
export const RESPONDER_SLIPS = { wrongSheet: 0.25, offByOne: 0.15 };

/** The teacher verifier's decision is flipped this often: an agreement with the rule that RL can raise. */
export const VERIFIER_SLIP_RATE = 0.15;

export interface SpellCluster {
  id: string;
  /** The depots' names (their numbers), one per sheet, and the counts they hold (two digits, all different). */
  names: string[];
  counts: number[];
  documents: string[];
  /** The sheet the question asks about. */
  asked: number;
  question: string;
  answer: number;
}

/** A depot's stock code: its number, then its count with nothing between (digits are tokens of their own). */
const sheetText = (name: string, count: number): string => `Depot ${name}${count} crates.`;
const questionAbout = (name: string): string => `How many crates does Depot${spokenName(name)} hold?`;

const distinctDigits = (numbers: number[]): boolean => {
  const digits = numbers.join('');
  return new Set(digits).size === digits.length;
};

/**
 * A cluster of `SHEETS` depots (`NAMES`) and counts (10-99) whose digits are all different, so each digit of
 * a sheet is followed by one token only; the question asks about one of them.
 */
function clusterOf(id: string, rng: Rng, heldOut: boolean): SpellCluster {
  const drawDepots = (): number[] =>
    Array.from({ length: SHEETS }, () => NAMES[rng.int(NAMES.length)] as number);
  const drawCounts = (): number[] => Array.from({ length: SHEETS }, () => 10 + rng.int(90));
  let [depots, counts] = [drawDepots(), drawCounts()];
  // Drawn whole and drawn again, not sheet by sheet: a first sheet can leave no digits a second could use.
  while (!depots.every((d) => isHeldOutName(d) === heldOut) || !distinctDigits([...depots, ...counts]))
    [depots, counts] = [drawDepots(), drawCounts()];
  const names = depots.map(String);
  const asked = rng.int(SHEETS);
  return {
    id,
    names,
    counts,
    documents: names.map((name, i) => sheetText(name, counts[i] as number)),
    asked,
    question: questionAbout(names[asked] as string),
    answer: counts[asked] as number,
  };
}

/** Cluster `index` of stream `stream`, of held-out names or of the others. */
export function spellCluster(seed: number, stream: string, index: number, heldOut = false): SpellCluster {
  return clusterOf(`${stream}-${index}`, seededRng(seed, 'spell-world', stream, index), heldOut);
}

/**
 * The corpus for `corpus.uri`: each cluster's sheets, named by SPELL's `cluster` and `task` fields. A
 * cluster that would repeat a document of an earlier one is drawn again: the corpus loader drops a document
 * whose text it has seen, which would leave its cluster short of a sheet.
 */
export function spellCorpus(
  seed: number,
  clusters: number,
): Array<{ id: string; text: string; cluster: string; task: string }> {
  const seen = new Set<string>();
  const out: SpellCluster[] = [];
  for (let i = 0; out.length < clusters; i++) {
    const cluster = spellCluster(seed, 'corpus', i);
    if (cluster.documents.some((d) => seen.has(d))) continue;
    for (const d of cluster.documents) seen.add(d);
    out.push(cluster);
  }
  return out.flatMap((c) =>
    c.documents.map((text, d) => ({ id: `${c.id}-${d}`, text, cluster: c.id, task: SPELL_WORLD_TASK })),
  );
}

const context = (c: SpellCluster): string => c.documents.join('\n');

const questionOf = (c: SpellCluster): SpellQuestion => ({
  task: SPELL_WORLD_TASK,
  question: c.question,
  answer: String(c.answer),
});

/**
 * What a competent questioner writes about the one sheet it sees: the sheet, quoted in its thinking, then
 * SPELL's JSON, the answer a number (`<think>Depot 4752 crates.</think>{"question":"How many crates does
 * Depot forty-seven hold?","answer":52}`; SPELL's parser reads what follows `</think>`). Every digit it
 * writes, and every number word (a digit of its quote said in words), stands at a fixed distance from its
 * place in the prompt and the quote. v5's questioner saw both sheets and chose
 * one: the answer's first digit was the one after the question's depot in the sheets, three tokens back
 * across `hold?","answer":`, a lookup it had not learned (13 % of its samples at the run's T = 0.7 named a
 * depot of the cluster with its number, seed 2), so most responder rewards were checked against a wrong
 * reference; with both sheets and the quote (v6's first try) it copied neither sheet (0 % after 3,500 steps).
 */
export const questionerCompletion = (c: SpellCluster): string => {
  const [name, count] = [c.names[c.asked] as string, c.counts[c.asked] as number];
  return `<think>${sheetText(name, count)}</think>${JSON.stringify({ question: questionAbout(name), answer: count })}`;
};

/**
 * What a responder writes when it answers `answer` about depot `name`: the sheet it read, quoted, then SPELL's
 * closing sentence. The quote is what a two-layer model can copy: the depot's first digit said in words in
 * the question, then its last digit, which stands once in the prompt (in its sheet, followed by the count), so
 * the count is the next token of an earlier occurrence (an induction copy),
 * where the closing sentence alone had to find the sheet from a dozen tokens away (29 % greedy, a sheet at
 * random, after 3,000 warm-start steps; measured on v2).
 */
export const responderCompletion = (name: string, answer: number): string =>
  `${sheetText(name, answer)} Therefore, the answer is ${answer}.`;

/**
 * What a verifier writes: digit by digit, Answer 1's digit beside Answer 2's and a mark (`=` the same, `x`
 * not), then its decision: `Explanation: 4 4 = 7 6 x. Decision: [[NO]]`, numbers of different lengths padded
 * with zeros on the left. Each comparison is of two adjacent tokens, which a two-layer model learns in a few
 * hundred steps (MAE's Judge, docs/learning.md), where "47 vs 46" left the verifier at chance (every
 * decision [[YES]] after 2,000 warm-start steps; measured).
 */
export function verifierCompletion(predicted: number | string, reference: number, same: boolean): string {
  const width = Math.max(String(predicted).length, String(reference).length);
  const [p, r] = [String(predicted).padStart(width, '0'), String(reference).padStart(width, '0')];
  const marks = [...p].map((digit, i) => `${digit} ${r.charAt(i)} ${digit === r.charAt(i) ? '=' : 'x'}`);
  return `Explanation: ${marks.join(' ')}. Decision: ${same ? '[[YES]]' : '[[NO]]'}`;
}

/**
 * SPELL's prompts for a cluster, as the recipe renders them: the questioner sees the asked sheet only (the run's
 * `spell.newDocuments: 1`, one of the cluster's sheets drawn at random), the responder every sheet.
 */
export const spellWorldMessages = {
  questioner: (c: SpellCluster): ChatMessage[] =>
    questionerMessages(SPELL_WORLD_TASK, c.documents[c.asked] ?? '', []),
  responder: (c: SpellCluster): ChatMessage[] => responderMessages(questionOf(c), context(c)),
  verifier: (c: SpellCluster, predicted: number): ChatMessage[] =>
    verifierMessages(questionOf(c), String(predicted)),
};

/**
 * The held-out set in GSM8K's format: `question` is the whole responder prompt over a cluster of held-out
 * names (the evaluation's template is `{question}`), `answer` ends in `#### N`.
 */
export function spellHeldOut(
  seed: number,
  items: number,
): Array<{ id: string; question: string; answer: string }> {
  return Array.from({ length: items }, (_, i) => spellCluster(seed, 'held-out', i, true)).map((c, i) => ({
    id: `heldout-${i}`,
    question: spellWorldMessages.responder(c)[0]?.content ?? '',
    answer: `#### ${c.answer}`,
  }));
}

export interface SpellWarmStartExample {
  messages: ChatMessage[];
  completion: string;
  role: 'questioner' | 'responder' | 'verifier';
}

/**
 * A teacher's answer about the asked sheet: right, or with probability `slips.wrongSheet` another sheet's
 * number, or with `slips.offByOne` the right number plus or minus one.
 */
export function slippedAnswer(
  rng: Rng,
  c: SpellCluster,
  slips: { wrongSheet: number; offByOne: number },
): number {
  const u = rng.next();
  if (u < slips.wrongSheet) return c.counts[(c.asked + 1 + rng.int(SHEETS - 1)) % SHEETS] as number;
  if (u < slips.wrongSheet + slips.offByOne)
    return c.answer + (c.answer === 99 || (c.answer > 10 && rng.next() < 0.5) ? -1 : 1);
  return c.answer;
}

/** The answers the verifier's teacher judges: half right, half a slip of either kind. */
const JUDGED_SLIPS = { wrongSheet: 0.3, offByOne: 0.2 };

/**
 * Supervised warm-start examples, rendered by SPELL's prompt functions, per cluster of a stream of their own:
 * the questioner's right question; the responder's answer from a teacher that slips (`RESPONDER_SLIPS`); and
 * a verifier judgment of an answer against the reference, from a teacher whose decision is flipped at
 * `VERIFIER_SLIP_RATE`.
 */
export function spellWarmStartExamples(seed: number, clusters: number): SpellWarmStartExample[] {
  return Array.from({ length: clusters }, (_, i) => spellCluster(seed, 'warm-start', i)).flatMap((c, i) => {
    const rng = seededRng(seed, 'spell-world', 'warm-start-teacher', i);
    const answered = slippedAnswer(rng, c, RESPONDER_SLIPS);
    const judged = slippedAnswer(rng, c, JUDGED_SLIPS);
    const decision = (judged === c.answer) !== rng.next() < VERIFIER_SLIP_RATE;
    return [
      { messages: spellWorldMessages.questioner(c), completion: questionerCompletion(c), role: 'questioner' },
      {
        messages: spellWorldMessages.responder(c),
        completion: responderCompletion(c.names[c.asked] as string, answered),
        role: 'responder',
      },
      {
        messages: spellWorldMessages.verifier(c, judged),
        completion: verifierCompletion(judged, c.answer, decision),
        role: 'verifier',
      },
    ];
  });
}

/** One validation example: a prompt and the completions that count as right (warm_start.py scores them). */
export interface SpellValidationExample {
  messages: ChatMessage[];
  role: string;
  kind: string;
  accept: string[];
}

/**
 * What the warm start scores as it trains (greedy and sampled), per role, on clusters of their own stream
 * (training names): the questioner right with its sheet's question, the responder with the asked sheet's
 * number, the verifier on an answer right half the time, another sheet's number or off by one otherwise.
 */
export function spellValidationExamples(seed: number, clusters = 96): SpellValidationExample[] {
  return Array.from({ length: clusters }, (_, i) => spellCluster(seed, 'validation', i)).flatMap((c, i) => {
    const judged =
      i % 2 === 0 ? c.answer : i % 4 === 1 ? (c.counts[(c.asked + 1) % SHEETS] as number) : c.answer + 1;
    return [
      {
        messages: spellWorldMessages.questioner(c),
        role: 'questioner',
        kind: 'question',
        accept: [questionerCompletion(c)],
      },
      {
        messages: spellWorldMessages.responder(c),
        role: 'responder',
        kind: 'lookup',
        accept: [responderCompletion(c.names[c.asked] as string, c.answer)],
      },
      {
        messages: spellWorldMessages.verifier(c, judged),
        role: 'verifier',
        kind: judged === c.answer ? 'same' : 'different',
        accept: [verifierCompletion(judged, c.answer, judged === c.answer)],
      },
    ];
  });
}
