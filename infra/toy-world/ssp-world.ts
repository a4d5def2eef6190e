/**
 * SSP's toy world: a seeded corpus of short linked documents in which a model built from scratch on a CPU can
 * learn to search. Each *chain* is a town, its founder and the founder's birthplace, stated by two
 * one-sentence documents ("Belawick was founded by Corenric.", "Corenric was born in Halormoor."), each titled
 * with the entity it is about. Questions take one search ("Which person is named as the founder of the town of
 * Belawick?", answer Corenric) or two ("In which place was the person who founded the town of Belawick born?",
 * answer Halormoor: the town's document names the founder, whose own document names the birthplace).
 *
 * What the two-layer model must learn, and why this world asks only that: copy the town from the question into
 * a query; copy an entity from the `<information>` block that query returned into the next query (the bridge
 * of a two-hop question); then copy the answer from the last block into `<answer>`. Each step is a copy of one
 * name from a known place a few tokens back, the operation the SPICE world measured a two-layer model learning
 * (docs/learning.md). Nothing can be answered from memory: held-out questions are about entities the model has
 * never seen, so only the search and the copies answer them.
 *
 * - **Names** are single words of three syllables from small sets (`Bel` `a` `wick`), a coda per kind (towns
 *   end in `wick`, `stad`…, people in `ric`, `mir`…, places in `moor`, `vale`…), every entity of the world a
 *   name of its own. The warm start's tokenizer (trained on its examples) learns the syllables, so any name,
 *   a held-out one included, is a few tokens, and BM25 (which indexes whole words) finds exactly the
 *   documents that name it.
 * - **Held out**: every fourth chain (`HELD_OUT_EVERY`). Its documents are in the corpus the index is built
 *   from, so the agent can find them, but no answer of D (the proposer's answers), no example question, no
 *   warm-start example (prompt, completion or retrieved passage) and no teacher slip names any of its three
 *   entities; the benchmark (`heldOutBenchmark`) asks only about them.
 * - **Every example is rendered by SSP's own code**: the solver's and the proposer's prompts are
 *   `solverMessages` and `proposerMessages`, and each trajectory is produced by the project's search loop
 *   (`runSearchLoop`, SSP's Search-R1 tags and final tag) with a scripted teacher as the model and the REAL
 *   retriever as the tool, so every `<information>` block is what BM25 returns for the query over this corpus,
 *   byte for byte, and the loss-mask spans are the loop's own. A template or a turn-format change shows up as a
 *   changed example, never as a silently different world.
 * - **Teacher slips** (`SLIP_RATE`, per hop count): a wrong query (another training entity of the right kind,
 *   whose documents the teacher then reads and answers from) or a premature answer (before searching: another
 *   training entity; on a two-hop question after the first search: the bridge entity, the founder). The
 *   warm-started solver's greedy answer should then be mostly right and its samples less so, more on two hops:
 *   the headroom RL on verifiable rewards closes (the SPICE world's reasoning, world.ts). The rates are not
 *   yet tuned by a warm start.
 * - **No `<think>`**: Search-R1's template asks for reasoning first, but nothing in SSP's rewards reads it, and
 *   every token a tiny model writes is one more it can get wrong; the teacher writes only the calls and the
 *   answer.
 * - **The proposer** is taught SSP's backward procedure on training answers: search the answer, copy the
 *   entity that links to it, search that, then write the question about the town it reached, two distinct
 *   searches in all as SSP's rule filter requires (`rules.minSearches`), with questions of at least ten words
 *   (`rules.minWords`).
 *
 * Everything is derived from `(seed, part, index)` through the project's seeded streams, so the same seed gives
 * byte-identical files on every machine.
 */
import type { ChatSample, LlmCaller } from '../../activities/clients/inference';
import type { ChatMessage } from '../../activities/clients/trainer-contract';
import { seededRng, type Rng } from '../../activities/lib/rng';
import { SSP_DEFAULTS } from '../../config/presets/ssp';
import { extractQuestion, modelText } from '../../activities/recipes/ssp/parse';
import { proposerMessages, solverMessages } from '../../activities/recipes/ssp/prompts';
import { PROPOSER, SOLVER } from '../../activities/recipes/ssp/records';
import { ruleFilter } from '../../activities/recipes/ssp/rules';
import { tagContents } from '../../activities/scoring/tags';
import { runSearchLoop } from '../../activities/tools/search-loop';
import type { Retriever } from '../../activities/tools/types';
import type { WarmStartExample } from './world';

/** Hops of a question: the searches its answer needs. */
export type Hops = 1 | 2;
export const HOPS: readonly Hops[] = [1, 2];

/** Every `HELD_OUT_EVERY`-th chain (indices 3, 7, 11, …) is held out: a quarter of the world. */
export const HELD_OUT_EVERY = 4;

/**
 * The share of the solver teacher's trajectories that slip, per hop count: a two-hop question has twice the
 * steps to get wrong. Placeholders until a warm start measures where greedy and sampled accuracy land.
 */
export const SLIP_RATE: Record<Hops, number> = { 1: 0.25, 2: 0.5 };

/**
 * How the examples are searched: SSP's preset (`retrieval.topK` 3, `ssp.maxTurns` 10) and the default passage
 * budget. A run of this world must search the same way, or its observations differ from the warm start's.
 */
export const SSP_WORLD_SEARCH = { topK: 3, passageTokens: 500, maxTurns: 10, maxTokens: 4096 };

const ONSETS = 'Al Bel Cor Dun El Fen Gar Hal Ir Kel Lor Mar Nor Os Pel Ros'.split(' ');
const MIDDLES = ['a', 'e', 'i', 'o', 'u', 'an', 'en', 'or'];
const CODAS = {
  town: ['wick', 'stad', 'holm', 'ford', 'by', 'ness'],
  person: ['ric', 'mir', 'dan', 'mund', 'tor', 'vin'],
  place: ['moor', 'vale', 'mere', 'dale', 'fell', 'combe'],
} as const;
type Kind = keyof typeof CODAS;

/** The most chains a world can have: every entity takes a name of its kind of its own. */
export const MAX_CHAINS = ONSETS.length * MIDDLES.length * CODAS.town.length;

/** A town, its founder and the founder's birthplace. */
export interface Chain {
  index: number;
  town: string;
  founder: string;
  birthplace: string;
  heldOut: boolean;
}

export interface SearchTask {
  hops: Hops;
  /** The chain's town: what the first search looks for. */
  town: string;
  question: string;
  answer: string;
}

export interface WorldDocument {
  id: string;
  title: string;
  text: string;
}

const namesOf = (seed: number, kind: Kind): string[] =>
  seededRng(seed, 'ssp-world', 'names', kind).shuffle(
    ONSETS.flatMap((o) => MIDDLES.flatMap((m) => CODAS[kind].map((c) => `${o}${m}${c}`))),
  );

/** The world's `count` chains, every entity named once (`count` ≤ `MAX_CHAINS`). */
export function chains(seed: number, count: number): Chain[] {
  if (!Number.isInteger(count) || count < HELD_OUT_EVERY || count > MAX_CHAINS)
    throw new RangeError(`an SSP world has ${HELD_OUT_EVERY} to ${MAX_CHAINS} chains, not ${count}`);
  const [towns, people, places] = (['town', 'person', 'place'] as const).map((k) => namesOf(seed, k));
  return Array.from({ length: count }, (_, index) => ({
    index,
    town: towns?.[index] as string,
    founder: people?.[index] as string,
    birthplace: places?.[index] as string,
    heldOut: index % HELD_OUT_EVERY === HELD_OUT_EVERY - 1,
  }));
}

const foundedBy = (town: string, founder: string): string => `${town} was founded by ${founder}.`;
const bornIn = (person: string, place: string): string => `${person} was born in ${place}.`;

/** A chain's two documents, each titled with its subject. */
export function documentsOf(chain: Chain): [WorldDocument, WorldDocument] {
  const id = String(chain.index).padStart(5, '0');
  return [
    { id: `town-${id}`, title: chain.town, text: foundedBy(chain.town, chain.founder) },
    { id: `person-${id}`, title: chain.founder, text: bornIn(chain.founder, chain.birthplace) },
  ];
}

/** The corpus the search index is built from: every chain's documents, held-out ones included. */
export function sspCorpus(seed: number, count: number): WorldDocument[] {
  return chains(seed, count).flatMap(documentsOf);
}

const QUESTION: Record<Hops, (town: string) => string> = {
  1: (town) => `Which person is named as the founder of the town of ${town}?`,
  2: (town) => `In which place was the person who founded the town of ${town} born?`,
};

/** The question of `hops` searches about a chain, and its answer. */
export function taskOf(chain: Chain, hops: Hops): SearchTask {
  return {
    hops,
    town: chain.town,
    question: QUESTION[hops](chain.town),
    answer: hops === 1 ? chain.founder : chain.birthplace,
  };
}

/** The task a question of the world asks, read back from its text; undefined for any other text. */
export function parseQuestion(question: string): { hops: Hops; town: string } | undefined {
  for (const hops of HOPS) {
    const [before, after] = QUESTION[hops]('\0').split('\0') as [string, string];
    if (question.startsWith(before) && question.endsWith(after)) {
      const town = question.slice(before.length, question.length - after.length);
      if (/^[A-Z][a-z]+$/.test(town)) return { hops, town };
    }
  }
  return undefined;
}

/**
 * The warm start's tokenizer (the kernel's `warm-start --split-words`, word_tokenizer.py): BPE merges stay
 * inside words, and the calls' tags, the documents' fixed words, the questions' templates and the proposer's
 * prompt for each hop count are tokens of their own, so a name is cut into the same tokens in a question, a
 * query, a passage and an answer. (The proposer's prompt names its hop count, so the prompt pieces the warm
 * start finds by itself stop there; split at words, the rest of it was 340 tokens.) The vocabulary stops short
 * of whole names: at 850, on seed 0's 768 chains, 98 % of the names, trained on or held out alike, are two
 * tokens (syllables every name shares), and 5 of 1,152 trained names one; at 1,200 a third of the trained names
 * were one token each, which no held-out name can be.
 */
export function sspWordTokenizer(seed: number, count: number): { pieces: string[]; vocabSize: number } {
  const proposerPrompts = HOPS.flatMap((hops) =>
    proposerMessages('\0', hops, exampleQuestions(seed, count)).flatMap((m) => m.content.split('\0')),
  );
  return {
    pieces: [
      ...['search', 'answer', 'question'].flatMap((tag) => [`<${tag}> `, ` </${tag}>`]),
      foundedBy('', '').slice(0, -1),
      bornIn('', '').slice(0, -1),
      ...HOPS.flatMap((hops) => QUESTION[hops]('\0').split('\0')),
      ...proposerPrompts,
    ].filter((piece) => piece.length > 1),
    vocabSize: 850,
  };
}

/**
 * Whether a proposer's trajectory wrote a valid question for `answer`: SSP's rule filter passes it, and by the
 * world's truth it asks, in `hops` searches, for that answer (what RAG verification is there to confirm).
 */
export function isValidProposal(
  world: readonly Chain[],
  answer: string,
  hops: Hops,
  trajectory: { completion: string; lossMaskSpans: Array<[number, number]>; searches: string[] },
): boolean {
  const question = extractQuestion(modelText(trajectory));
  const { searches } = trajectory;
  const input = { question, answer, searchTurns: hops, searches, informationBlocks: searches.length };
  if (ruleFilter(input, SSP_DEFAULTS.rules) !== undefined) return false;
  const asked = parseQuestion(question ?? '');
  const chain = world.find((c) => c.town === asked?.town);
  return asked?.hops === hops && chain !== undefined && taskOf(chain, hops).answer === answer;
}

/**
 * The answer `text` (passages, or RAG materials) gives to a question of the world: its town's founder, and for
 * two hops the founder's birthplace, each read from a sentence of the world in `text`; undefined when the
 * question is not one of the world's or `text` does not hold its chain.
 */
export function answerFromText(question: string, text: string): string | undefined {
  const asked = parseQuestion(question);
  if (asked === undefined) return undefined;
  const founder = readAfter(text, foundedBy(asked.town, '').slice(0, -1));
  return asked.hops === 1 || founder === undefined
    ? founder
    : readAfter(text, bornIn(founder, '').slice(0, -1));
}

const training = (seed: number, count: number): Chain[] => chains(seed, count).filter((c) => !c.heldOut);

/** The proposer's example questions (shown in every proposer prompt, so the prompt stays one template). */
export function exampleQuestions(seed: number, count: number): string[] {
  const first = training(seed, count)[0] as Chain;
  return HOPS.map((hops) => taskOf(first, hops).question);
}

/**
 * D, SSP's answers (`ssp.answers`: `{"answer", "search_turns", "examples"}`): every training chain's founder
 * (n = 1) and birthplace (n = 2). No held-out entity is among them.
 */
export function sspAnswers(
  seed: number,
  count: number,
): Array<{ answer: string; search_turns: Hops; examples: string[] }> {
  const examples = exampleQuestions(seed, count);
  return training(seed, count).flatMap((chain) =>
    HOPS.map((hops) => ({ answer: taskOf(chain, hops).answer, search_turns: hops, examples })),
  );
}

/**
 * The held-out benchmark, as agentic evaluation reads it (`{"id", "question", "answer"}`): `items` questions
 * about held-out chains, one and two hops alternately, each chain asked at most once per hop count.
 */
export function heldOutBenchmark(
  seed: number,
  count: number,
  items: number,
): Array<{ id: string; question: string; answer: string }> {
  const held = chains(seed, count).filter((c) => c.heldOut);
  if (items > 2 * held.length)
    throw new RangeError(`${count} chains hold ${2 * held.length} held-out questions, not ${items}`);
  const order = seededRng(seed, 'ssp-world', 'held-out').shuffle(held);
  return Array.from({ length: items }, (_, i) => {
    const hops = HOPS[i % 2] as Hops;
    const { question, answer } = taskOf(order[Math.floor(i / 2)] as Chain, hops);
    return { id: `heldout-${i}`, question, answer };
  });
}

/** A teacher's next turn, from the trajectory so far (one assistant message that grows turn by turn). */
export type Policy = (completion: string) => string;

/**
 * A scripted model for the search loop: each request's continued assistant message is handed to `policy`,
 * whose turn comes back as a server would return it, the stop sequence that ended it left out (the loop puts
 * it back, `closeTurn`).
 */
export function teacherCaller(policy: Policy): LlmCaller {
  return {
    chat: (request) => {
      const last = request.messages.at(-1);
      const soFar = request.continueFinalMessage && last?.role === 'assistant' ? last.content : '';
      const turn = policy(soFar);
      const stop = request.stop?.find((s) => turn.endsWith(s));
      const sample: ChatSample = {
        content: stop ? turn.slice(0, -stop.length) : turn,
        finishReason: 'stop',
      };
      return Promise.resolve([sample]);
    },
  };
}

const search = (query: string): string => `<search> ${query} </search>`;
const answerTag = (answer: string): string => `<answer> ${answer} </answer>`;
const questionTag = (text: string): string => `<question> ${text} </question>`;

/** The queries so far and the passages the last one returned. */
export function progress(completion: string): { queries: string[]; information: string } {
  return {
    queries: tagContents(completion, 'search'),
    information: tagContents(completion, 'information').at(-1) ?? '',
  };
}

/** The name a sentence of the world states in `information` after `prefix` (`"Belawick was founded by "`). */
const readAfter = (information: string, prefix: string): string | undefined =>
  new RegExp(`${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}([A-Z][a-z]+)\\.`).exec(information)?.[1];

/** The entity linked to `entity` in the passages: a town's founder, or a person's birthplace. */
export const linkOf = (information: string, entity: string): string | undefined =>
  readAfter(information, `${entity} was founded by `) ?? readAfter(information, `${entity} was born in `);

type Slip = { kind: 'wrong_query' | 'premature_answer'; step: number } | undefined;

/**
 * The solver teacher: searches the question's town, then (two hops) the founder its document names, then
 * answers with the entity the last search's passages link to its query. It copies from what it read, so a
 * wrong query leads to a wrong answer; `slip` makes it search `decoy` or answer early at `slip.step`.
 */
function solverPolicy(task: SearchTask, slip: Slip, decoy: { query: string; answer: string }): Policy {
  return (completion) => {
    const { queries, information } = progress(completion);
    const step = queries.length;
    const read = step === 0 ? task.town : linkOf(information, queries.at(-1) as string);
    if (read === undefined || step === task.hops) return answerTag(read ?? decoy.answer);
    if (slip?.step === step && slip.kind === 'premature_answer')
      return answerTag(step === 0 ? decoy.answer : read);
    return search(slip?.step === step && slip.kind === 'wrong_query' ? decoy.query : read);
  };
}

/**
 * The proposer teacher (SSP's backward procedure): searches the answer, copies the entity its passages link to
 * it (the person born in a place, the town a person founded), searches that, and, having reached the town,
 * writes the question of `hops` about it.
 */
function proposerPolicy(answer: string, hops: Hops): Policy {
  return (completion) => {
    const { queries, information } = progress(completion);
    if (queries.length === 0) return search(answer);
    const last = queries.at(-1) as string;
    const linkedTo = (pattern: (x: string) => string): string | undefined =>
      new RegExp(pattern('([A-Z][a-z]+)').replace(/\./g, '\\.')).exec(information)?.[1];
    if (queries.length === 1) {
      // Two hops: the person born in the answer; one hop: the town the answer founded.
      const next = hops === 2 ? linkedTo((x) => bornIn(x, last)) : linkedTo((x) => foundedBy(x, last));
      if (next !== undefined) return search(next);
    }
    const town = hops === 2 ? linkedTo((x) => foundedBy(x, last)) : last;
    return questionTag(QUESTION[hops](town ?? last));
  };
}

/** A warm-start example of a search role: its completion's `<information>` blocks are out of the loss. */
export type SearchExample = WarmStartExample & { lossMaskSpans: Array<[number, number]> };

/** One trajectory of `policy` through SSP's search loop, with the real retriever as the tool. */
async function rollout(
  messages: ChatMessage[],
  policy: Policy,
  retriever: Retriever,
  role: string,
  finalTag: string,
): Promise<SearchExample> {
  const trajectory = await runSearchLoop({
    llm: teacherCaller(policy),
    retriever,
    messages,
    role,
    call: 'warm-start',
    seed: 0,
    temperature: 1,
    topP: 1,
    syntax: 'search_tags',
    finalTags: [finalTag],
    ...SSP_WORLD_SEARCH,
  });
  if (trajectory.stop !== 'final')
    throw new Error(`the ${role} teacher's trajectory stopped (${trajectory.stop}) before its final tag`);
  return { messages, completion: trajectory.completion, role, lossMaskSpans: trajectory.lossMaskSpans };
}

/** Another training chain than `chain`: the wrong entity a slip searches or answers. */
const otherChain = (rng: Rng, pool: readonly Chain[], chain: Chain): Chain => {
  for (;;) {
    const other = rng.pick(pool);
    if (other.index !== chain.index) return other;
  }
};

/**
 * Supervised warm-start examples, per index: one solver trajectory (a training chain and a hop count drawn
 * uniformly, slipping at `SLIP_RATE`) and, every `proposerEvery`-th index, one proposer trajectory (a training
 * answer of D). Each carries the loop's `lossMaskSpans`: the `<information>` blocks are the environment's, not
 * the model's, and are left out of the loss as the trainer leaves them out of a training row.
 */
export async function sspWarmStartExamples(
  seed: number,
  count: number,
  items: number,
  retriever: Retriever,
  proposerEvery = 4,
): Promise<SearchExample[]> {
  const pool = training(seed, count);
  const examples = exampleQuestions(seed, count);
  const out: SearchExample[] = [];
  for (let i = 0; i < items; i++) {
    const rng = seededRng(seed, 'ssp-world', 'warm-start', i);
    const chain = rng.pick(pool);
    const task = taskOf(chain, rng.pick(HOPS));
    const slip: Slip =
      rng.next() < SLIP_RATE[task.hops]
        ? { kind: rng.pick(['wrong_query', 'premature_answer'] as const), step: rng.int(task.hops) }
        : undefined;
    const other = otherChain(rng, pool, chain);
    const decoy = {
      query: slip?.step === 1 ? other.founder : other.town,
      answer: taskOf(other, task.hops).answer,
    };
    out.push(
      await rollout(
        solverMessages(task.question),
        solverPolicy(task, slip, decoy),
        retriever,
        SOLVER,
        'answer',
      ),
    );
    if (i % proposerEvery === 0) {
      const proposed = rng.pick(HOPS);
      const answer = taskOf(rng.pick(pool), proposed).answer;
      out.push(
        await rollout(
          proposerMessages(answer, proposed, examples),
          proposerPolicy(answer, proposed),
          retriever,
          PROPOSER,
          'question',
        ),
      );
    }
  }
  return out;
}
