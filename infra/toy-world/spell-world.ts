/**
 * SPELL's toy world: lookups over a cluster of fact sheets, played with SPELL's own prompts and parsers. A
 * cluster is three one-line sheets, each a depot with a name of a place and a digit and a count ("Depot Kilo
 * 4 holds 52 crates."). The questioner reads the cluster and writes a question about one depot with its
 * answer (`{"question":"How many crates does Depot Kilo 4 hold?","answer":52}`); the responder answers it with
 * the sheets in context ("Therefore, the answer is 52."), copying the number from the sheet the question
 * names; the verifier, the same model, compares the responder's answer with the reference ("Explanation: 52
 * vs 52. Decision: [[YES]]").
 *
 * Why this world: the numbers are only in the sheets, so the grounding probe (the responder without them)
 * cannot answer and every question needs its cluster; and what the responder does is a copy keyed by a name
 * (find the sheet that names the question's depot, copy its number), which a two-layer model learns by
 * induction, where the previous world's arithmetic across two sheets was beyond it (spell-learn: 14-26 %
 * greedy after a full warm start). The responder's teacher slips (another sheet's number, or off by one:
 * `RESPONDER_SLIPS`), so its greedy answers are right and its samples often not; the verifier's teacher
 * flips its decision (`VERIFIER_SLIP_RATE`), so both roles have headroom for RL.
 *
 * Held-out: clusters whose depots' names are held-out pairs of place and digit (`isHeldOutName`): no corpus document,
 * warm-start or validation example names one. Held-out accuracy is the responder's on them, asked with
 * SPELL's responder prompt over the cluster.
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
 * Depot names are a place and a number of one digit (`Kilo 4`): 240 of them. The digit is what keeps a name's
 * tokens the same wherever it stands: the warm start's tokenizer splits only around digits and merges the
 * rest, so two words fused with the text around them ("crates.\nDepot Kilo Field holds " one token in a
 * sheet, "Kilo" "Fi" "el" "d" in the question; measured), while a place is cut the same way in every
 * training and held-out name, its digit a token of its own.
 */
const PLACES = [
  'Alder',
  'Birch',
  'Cedar',
  'Delta',
  'Ember',
  'Fjord',
  'Grove',
  'Haven',
  'Inlet',
  'Juniper',
  'Kilo',
  'Lima',
  'Maple',
  'North',
  'Oak',
  'Pine',
  'Quay',
  'Ridge',
  'Stone',
  'Tide',
  'Umber',
  'Vale',
  'Willow',
  'Yarrow',
];
const CODES = 10;

/**
 * A depot's name is held out when its pair of place and digit is (a fifth of the pairs): no corpus document,
 * warm-start or validation example names one, every held-out cluster names only them. Each place is also in
 * training names, so the tokenizer cuts it as it learned; what is new is the name, and the number it holds.
 */
export function isHeldOutName(place: number, code: number): boolean {
  return (place + 3 * code) % 5 === 0;
}

/** Fact sheets per cluster: the one the question names and two others, each a number it could be confused with. */
export const SHEETS = 3;

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
  /** The depots' names, one per sheet, and their numbers (two digits, all different). */
  names: string[];
  counts: number[];
  documents: string[];
  /** The sheet the question asks about. */
  asked: number;
  question: string;
  answer: number;
}

const sheetText = (name: string, count: number): string => `Depot ${name} holds ${count} crates.`;
const questionAbout = (name: string): string => `How many crates does Depot ${name} hold?`;

/**
 * A cluster of `SHEETS` depots whose places differ and whose digits differ (either tells them apart), with
 * numbers 10-99, all different; the question asks about one of them.
 */
function clusterOf(id: string, rng: Rng, heldOut: boolean): SpellCluster {
  const places: number[] = [];
  const codes: number[] = [];
  const counts: number[] = [];
  while (places.length < SHEETS) {
    const [place, code, count] = [rng.int(PLACES.length), rng.int(CODES), 10 + rng.int(90)];
    if (isHeldOutName(place, code) !== heldOut) continue;
    if (places.includes(place) || codes.includes(code) || counts.includes(count)) continue;
    places.push(place);
    codes.push(code);
    counts.push(count);
  }
  const names = places.map((p, i) => `${PLACES[p]} ${codes[i]}`);
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

/** What a competent questioner writes about sheet `sheet`: SPELL's JSON, the answer a number. */
export const questionerCompletion = (c: SpellCluster, sheet = c.asked): string =>
  JSON.stringify({ question: questionAbout(c.names[sheet] as string), answer: c.counts[sheet] });

/**
 * What a responder writes when it answers `answer`: SPELL's closing sentence alone (with working written
 * first, the old world's responder learned neither; measured on spell-learn).
 */
export const responderCompletion = (answer: number): string => `Therefore, the answer is ${answer}.`;

/**
 * What a verifier writes: the two answers side by side as its explanation, then its decision. Set next to
 * each other, the two numbers are compared where they stand, not across the prompt (a decision alone stayed
 * at chance after 5,000 warm-start steps; measured).
 */
export const verifierCompletion = (predicted: number, reference: number, same: boolean): string =>
  `Explanation: ${predicted} vs ${reference}. Decision: ${same ? '[[YES]]' : '[[NO]]'}`;

/** SPELL's prompts for a cluster, as the recipe renders them (the questioner sees every sheet). */
export const spellWorldMessages = {
  questioner: (c: SpellCluster): ChatMessage[] => questionerMessages(SPELL_WORLD_TASK, context(c), []),
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
  if (u < slips.wrongSheet + slips.offByOne) return c.answer + (c.answer === 99 || rng.next() < 0.5 ? -1 : 1);
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
        completion: responderCompletion(answered),
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
 * (training names): the questioner right with any sheet's question, the responder with the asked sheet's
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
        accept: c.names.map((_, sheet) => questionerCompletion(c, sheet)),
      },
      {
        messages: spellWorldMessages.responder(c),
        role: 'responder',
        kind: 'lookup',
        accept: [responderCompletion(c.answer)],
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
