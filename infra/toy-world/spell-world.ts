/**
 * SPELL's toy world: SPICE's ladder of sums (world.ts) stated across the documents of a cluster, played with
 * SPELL's own prompts and parsers. A cluster is two short fact sheets about one depot: what it holds, and
 * what it receives or ships ("Depot Kilo holds 52 crates." / "Depot Kilo ships 5 crates."). The questioner
 * reads the cluster and writes a financial-math question with its answer (`{"question": "How many crates
 * does Depot Kilo hold now?", "answer": 47}`); the responder answers it with the documents in context
 * ("Therefore, the answer is 47."), and the verifier, the same model, compares the responder's
 * answer with the reference ("Decision: [[YES]]").
 *
 * Why this world: the numbers are only in the documents, so the grounding probe (the responder without
 * them) cannot answer and every question needs its cluster, while what the responder computes is SPICE's
 * ladder (add, sub, add with a carry, sub with a borrow), which a two-layer model learns from a few
 * thousand examples; the two numbers stand at the same places of every cluster, which the model copies from
 * far more easily than from rows it has to find (world.ts). The teacher of the responder slips at SPICE's
 * rates per rung (its greedy answer is right, its samples often not), and the verifier's teacher slips too,
 * so both roles have headroom for RL.
 *
 * Held-out: clusters of a stream no other file draws from, whose facts are the ones SPICE's world reserves
 * (`isHeldOutFact`): no document of the corpus, no warm-start or validation example states one. Held-out
 * accuracy is the responder's on them, asked with SPELL's responder prompt over the cluster.
 */
import type { ChatMessage } from '../../activities/clients/trainer-contract';
import { seededRng, type Rng } from '../../activities/lib/rng';
import {
  questionerMessages,
  responderMessages,
  verifierMessages,
} from '../../activities/recipes/spell/prompts';
import type { SpellQuestion } from '../../activities/recipes/spell/records';
import { drawFact, RUNGS, SLIP_RATE, teacherAnswer, type Fact, type Rung } from './world';

/** The one task of the world: a numeric answer that SPELL's rule check compares by value. */
export const SPELL_WORLD_TASK = 'financial_math';

/**
 * Depot names, a place and a kind of site (`Kilo Yard`): a few tokens each, copied from the cluster into the
 * question, and enough of them (24 × 8) for 2,000 clusters whose documents are all distinct.
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
const SITES = ['Yard', 'Dock', 'Point', 'Hill', 'Cross', 'Bay', 'Field', 'Mill'];

/** The teacher verifier's decision is flipped this often: an agreement with the rule that RL can raise. */
export const VERIFIER_SLIP_RATE = 0.2;

export interface SpellCluster {
  id: string;
  rung: Rung;
  documents: [string, string];
  question: string;
  answer: number;
}

/** A cluster of the rung's fact: the depot holds `x` and receives `y` (add) or holds `z` and ships `y` (sub). */
function clusterOf(id: string, rng: Rng, rung: Rung, heldOut: boolean): SpellCluster {
  const fact: Fact = drawFact(rng, rung, heldOut);
  const name = `${rng.pick(PLACES)} ${rng.pick(SITES)}`;
  const adds = rung === 'add' || rung === 'add_carry';
  const [holds, moved, answer] = adds ? [fact.x, fact.y, fact.z] : [fact.z, fact.y, fact.x];
  return {
    id,
    rung,
    documents: [
      `Depot ${name} holds ${holds} crates.`,
      `Depot ${name} ${adds ? 'receives' : 'ships'} ${moved} crates.`,
    ],
    question: `How many crates does Depot ${name} hold now?`,
    answer,
  };
}

/** Cluster `index` of stream `stream`: the rungs in turn, about held-out facts or about the others. */
export function spellCluster(seed: number, stream: string, index: number, heldOut = false): SpellCluster {
  const rung = RUNGS[index % RUNGS.length] as Rung;
  return clusterOf(`${stream}-${index}`, seededRng(seed, 'spell-world', stream, index), rung, heldOut);
}

/**
 * The corpus for `corpus.uri`: each cluster's two documents, named by SPELL's `cluster` and `task` fields. A
 * cluster that would repeat a document of an earlier one is drawn again: the corpus loader drops a document
 * whose text it has seen, which would leave its cluster without the fact (measured: with one word per name,
 * most clusters lost their second document).
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

/** What a competent questioner writes: SPELL's JSON, the answer a number. */
export const questionerCompletion = (c: SpellCluster): string =>
  JSON.stringify({ question: c.question, answer: c.answer });

/**
 * What a responder writes when it answers `answer`: SPELL's closing sentence, the number computed from the
 * documents as the questioner computes its reference (with the working first, "52 - 5 = 47. Therefore, ...",
 * the responder's greedy answers were right on none of the validation clusters after 3,000 warm-start steps
 * while the questioner's were on a few per cent; measured).
 */
export const responderCompletion = (answer: number): string => `Therefore, the answer is ${answer}.`;

/**
 * What a verifier writes: the two answers side by side as its explanation, then its decision. Set next to
 * each other, the two numbers are compared where they stand, not across the prompt (a decision alone stayed
 * at chance after 5,000 warm-start steps; measured).
 */
export const verifierCompletion = (predicted: number, reference: number, same: boolean): string =>
  `Explanation: ${predicted} vs ${reference}. Decision: ${same ? '[[YES]]' : '[[NO]]'}`;

/** SPELL's prompts for a cluster, as the recipe renders them (the questioner sees both documents). */
export const spellWorldMessages = {
  questioner: (c: SpellCluster): ChatMessage[] => questionerMessages(SPELL_WORLD_TASK, context(c), []),
  responder: (c: SpellCluster): ChatMessage[] => responderMessages(questionOf(c), context(c)),
  verifier: (c: SpellCluster, predicted: number): ChatMessage[] =>
    verifierMessages(questionOf(c), String(predicted)),
};

/**
 * The held-out set in GSM8K's format: `question` is the whole responder prompt over an unseen cluster (the
 * evaluation's template is `{question}`), `answer` ends in `#### N`.
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
 * Supervised warm-start examples, rendered by SPELL's prompt functions, per cluster of a stream of their own:
 * the questioner's right question; the responder's answer from a teacher that slips at SPICE's rate for the
 * rung (`SLIP_RATE`); and a verifier judgment of such an answer against the reference, from a teacher whose
 * decision is flipped at `VERIFIER_SLIP_RATE`.
 */
export function spellWarmStartExamples(seed: number, clusters: number): SpellWarmStartExample[] {
  return Array.from({ length: clusters }, (_, i) => spellCluster(seed, 'warm-start', i)).flatMap((c, i) => {
    const rng = seededRng(seed, 'spell-world', 'warm-start-teacher', i);
    const answered = teacherAnswer(rng, c.answer, SLIP_RATE[c.rung]);
    const judged = teacherAnswer(rng, c.answer, 0.5);
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

/** What the warm start scores as it trains (greedy and sampled), per role, on clusters of their own stream. */
export function spellValidationExamples(seed: number, clusters = 96): SpellValidationExample[] {
  return Array.from({ length: clusters }, (_, i) => spellCluster(seed, 'validation', i)).flatMap((c, i) => {
    const judged = i % 2 === 0 ? c.answer : c.answer + 1;
    return [
      {
        messages: spellWorldMessages.questioner(c),
        role: 'questioner',
        kind: c.rung,
        accept: [questionerCompletion(c)],
      },
      {
        messages: spellWorldMessages.responder(c),
        role: 'responder',
        kind: c.rung,
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
