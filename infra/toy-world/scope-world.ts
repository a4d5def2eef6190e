/**
 * SCOPE's toy world: SSP's search world (ssp-world.ts: towns, their founders and the founders' birthplaces,
 * one sentence per document, a quarter of the chains held out) with SCOPE's two policies and its frozen judge
 * answered by rule (scope-grader.ts). A task asks one of three things of a chain, a ladder of difficulty:
 * - `founder`, "Which person founded the town of Belawick?": one search, one rubric (the founder);
 * - `both`, "Which person founded the town of Belawick, and where was that person born?": two searches, two
 *   rubrics, so an answer with the founder alone still earns half;
 * - `birthplace`, "Where was the person who founded the town of Belawick born?": two searches, one rubric (the
 *   birthplace), so a wrong second search earns nothing.
 * With two searches the Challenger chooses which of the three to ask: its rung. That choice is what lets f_diff
 * move its tasks as the Solver improves (the Solver masters `founder` first), as the paper's co-evolving
 * Challenger keeps ḡ from drifting up the way a frozen one lets it (its stale curriculum, ḡ → 0.71).
 *
 * - **Source documents** are the training chains' town documents (`scopeSourceCorpus`, the run's
 *   `corpus.uri`); the index holds every chain's documents, held-out ones included, so the agents can find
 *   them, but no source document, warm-start example or slip names a held-out entity.
 * - **The Challenger** searches its source town, and with a budget of two the founder its results name, then
 *   writes a task: with one search a `founder` task, with two any of the three asks, uniformly. The rubric
 *   writer (with the retrieved passages as context, `rubricContext: source_and_retrieved`) writes a rubric per
 *   fact the task asks. Its slips: a wrong query (another training town, so its task names nothing of the
 *   source document and fails relevance) or a premature task (a `founder` task before its last search, a
 *   lower format score).
 * - **The Solver** searches the question's town, then (two searches) the founder it read, and answers with
 *   what the task asks of the names it read: "Corenric", "Corenric, Halormoor" or "Halormoor". Its slip is a
 *   wrong query (another chain's town or founder: its names are then that chain's), not SSP's premature
 *   answer, which SCOPE's format terms would punish whatever the grader (`solverPolicy`).
 * - **Every example is rendered by SCOPE's own prompts** (`challengerMessages`, `solverMessages`) and run by
 *   the project's search loop with the real retriever, with SCOPE's budget notice, so observations and
 *   loss-mask spans are what a run produces.
 * - `<think>` is one fixed token per turn (`THINK`): SCOPE's format rewards read it for both roles.
 */
import { seededRng, type Rng } from '../../activities/lib/rng';
import type { ChatMessage } from '../../activities/clients/trainer-contract';
import {
  challengerMessages,
  SEARCHES_COMPLETE,
  solverMessages,
} from '../../activities/recipes/scope/prompts';
import { CHALLENGER, SOLVER } from '../../activities/recipes/scope/records';
import { runSearchLoop } from '../../activities/tools/search-loop';
import type { Retriever, SearchLoopSpec } from '../../activities/tools/types';
import {
  chains,
  documentsOf,
  heldOutBenchmark,
  linkOf,
  parseQuestion,
  progress,
  SSP_WORLD_SEARCH,
  teacherCaller,
  type Chain,
  type Policy,
  type SearchExample,
  type WorldDocument,
} from './ssp-world';

/** What a task asks of its chain (the ladder above, easiest first). */
export type Ask = 'founder' | 'both' | 'birthplace';
export const ASKS: readonly Ask[] = ['founder', 'both', 'birthplace'];

/** The searches an ask needs: the town, then (past the founder) the founder's document. */
export const searchesOf = (ask: Ask): 1 | 2 => (ask === 'founder' ? 1 : 2);

/** The Challenger's search budgets (`scope.searchTurnWeights`' first two). */
const BUDGETS = [1, 2] as const;

/** The Solver's searches (`scope.solverMaxSearches`): the two the two-search asks need. */
export const SCOPE_SOLVER_MAX_SEARCHES = 2;

/**
 * The share of each teacher's trajectories that slip, the Solver's whatever its ask. At one in two after two
 * searches (this world's first), the warm-started Solver answered the birthplace ask on 4 % of the held-out
 * items and 15 iterations left it at 6 %: a top rung no Challenger could be paid for.
 */
export const SCOPE_SLIP_RATE = { challenger: 0.25, solver: 0.25 };

const THINK = '<think> next </think> ';

const QUESTION: Record<Ask, (town: string) => string> = {
  founder: (town) => `Which person founded the town of ${town}?`,
  both: (town) => `Which person founded the town of ${town}, and where was that person born?`,
  birthplace: (town) => `Where was the person who founded the town of ${town} born?`,
};

export interface ScopeTask {
  ask: Ask;
  town: string;
  question: string;
  /** The names a full answer gives, in the order the searches reach them. */
  answer: string[];
}

export function scopeTaskOf(chain: Chain, ask: Ask): ScopeTask {
  const answer = {
    founder: [chain.founder],
    both: [chain.founder, chain.birthplace],
    birthplace: [chain.birthplace],
  };
  return { ask, town: chain.town, question: QUESTION[ask](chain.town), answer: answer[ask] };
}

/** The task a question of the world asks, read back from its text; undefined for any other text. */
export function parseScopeQuestion(question: string): { ask: Ask; town: string } | undefined {
  // `both` before `founder`: the two share their opening words.
  for (const ask of ['both', 'founder', 'birthplace'] as const) {
    const [before, after] = QUESTION[ask]('\0').split('\0') as [string, string];
    if (question.startsWith(before) && question.endsWith(after)) {
      const town = question.slice(before.length, question.length - after.length);
      if (/^[A-Z][a-z]+$/.test(town)) return { ask, town };
    }
  }
  return undefined;
}

const training = (seed: number, count: number): Chain[] => chains(seed, count).filter((c) => !c.heldOut);

/** The Challenger's source documents (`corpus.uri`): every training chain's town document. */
export function scopeSourceCorpus(seed: number, count: number): WorldDocument[] {
  return training(seed, count).map((c) => documentsOf(c)[0]);
}

/**
 * The held-out benchmark (`{"id", "question", "answer"}`, agentic evaluation): `items` tasks about the chains
 * SSP's benchmark asks about, in its order, the three asks in turn. `answer` is the full answer's
 * names; the world's figure is the rubric score the grader gives the Solver's answer, not this string's match.
 */
export function scopeHeldOutBenchmark(
  seed: number,
  count: number,
  items: number,
): Array<{ id: string; question: string; answer: string }> {
  const world = chains(seed, count);
  return heldOutBenchmark(seed, count, items).map((item, i) => {
    const chain = world.find((c) => c.town === parseQuestion(item.question)?.town) as Chain;
    const task = scopeTaskOf(chain, ASKS[i % ASKS.length] as Ask);
    return { id: item.id, question: task.question, answer: task.answer.join(', ') };
  });
}

const search = (query: string): string => `${THINK}<search> ${query} </search>`;
const answerTag = (names: readonly string[]): string => `${THINK}<answer> ${names.join(', ')} </answer>`;
const taskTag = (question: string): string => `${THINK}<task> <question> ${question} </question> </task>`;

type Slip<K extends string> = { kind: K; step: number } | undefined;

/**
 * The Solver teacher: searches the question's town, then (two searches) the founder it read, and answers what
 * the task asks of what it read; `slip` searches `decoy` at `slip.step` instead. Its only slip is a wrong
 * query, never an early answer: an early answer also loses SCOPE's format and search terms (R_S = L·g + 0.5·F
 * + 0.1·S), which pay for searching whatever the grades, so a Solver that RL cures of it would gain under a
 * grader that grades at random. A wrong query searches and answers as often as a right one: only the grades
 * tell them apart.
 */
function solverPolicy(task: ScopeTask, slip: Slip<'wrong_query'>, decoy: Chain): Policy {
  return (completion) => {
    const { queries, information } = progress(completion);
    const step = queries.length;
    const slips = slip?.step === step;
    if (step === 0) return search(slips ? decoy.town : task.town);
    const read = linkOf(information, queries.at(-1) as string);
    const names = [...queries.slice(1), ...(read === undefined ? [] : [read])];
    if (read === undefined || step === searchesOf(task.ask))
      return answerTag(task.ask === 'birthplace' ? names.slice(-1) : names);
    return search(slips ? decoy.founder : read);
  };
}

/**
 * The Challenger teacher: searches its source town, then the founder the results name, as many searches as
 * its budget, and writes its task about the town it searched first: `ask` after two searches, `founder` after
 * one; `slip` searches `decoy` or writes the task early at `slip.step`.
 */
function challengerPolicy(
  town: string,
  budget: 1 | 2,
  ask: Ask,
  slip: Slip<'wrong_query' | 'premature_task'>,
  decoy: Chain,
): Policy {
  return (completion) => {
    const { queries, information } = progress(completion);
    const step = queries.length;
    const slips = (kind: string): boolean => slip?.step === step && slip.kind === kind;
    if (step === budget || slips('premature_task'))
      return taskTag(QUESTION[step === 2 ? ask : 'founder'](queries[0] ?? town));
    if (step === 0) return search(slips('wrong_query') ? decoy.town : town);
    const read = linkOf(information, queries[0] as string);
    return search(slips('wrong_query') || read === undefined ? decoy.founder : read);
  };
}

/** How both roles search in the world; a run must search the same way (scope-run-config.ts). */
export const SCOPE_WORLD_SEARCH = {
  topK: SSP_WORLD_SEARCH.topK,
  passageTokens: SSP_WORLD_SEARCH.passageTokens,
  maxTokens: 1024,
};

async function rollout(
  messages: ChatMessage[],
  policy: Policy,
  retriever: Retriever,
  spec: Pick<SearchLoopSpec, 'role' | 'finalTags' | 'maxTurns' | 'searchLimit'>,
): Promise<SearchExample> {
  const trajectory = await runSearchLoop({
    llm: teacherCaller(policy),
    retriever,
    messages,
    call: 'warm-start',
    seed: 0,
    temperature: 1,
    topP: 1,
    syntax: 'search_tags',
    ...SCOPE_WORLD_SEARCH,
    ...spec,
  });
  if (trajectory.stop !== 'final')
    throw new Error(
      `the ${spec.role} teacher's trajectory stopped (${trajectory.stop}) before its final tag`,
    );
  return {
    messages,
    completion: trajectory.completion,
    role: spec.role,
    lossMaskSpans: trajectory.lossMaskSpans,
  };
}

/** Another training chain than `chain`. */
function otherChain(rng: Rng, pool: readonly Chain[], chain: Chain): Chain {
  for (;;) {
    const other = rng.pick(pool);
    if (other.index !== chain.index) return other;
  }
}

const slipOf = <K extends string>(rng: Rng, rate: number, kinds: readonly K[], steps: number): Slip<K> =>
  rng.next() < rate ? { kind: rng.pick(kinds), step: rng.int(steps) } : undefined;

/**
 * Supervised warm-start examples, per index: one Solver trajectory (a training chain and an ask drawn
 * uniformly) and one Challenger trajectory (a training town document, a budget of one or two searches and the
 * ask it writes after two, each drawn uniformly), each slipping at its rate, each with the loop's
 * `lossMaskSpans`.
 */
export async function scopeWarmStartExamples(
  seed: number,
  count: number,
  items: number,
  retriever: Retriever,
): Promise<SearchExample[]> {
  const pool = training(seed, count);
  const out: SearchExample[] = [];
  for (let i = 0; i < items; i++) {
    const rng = seededRng(seed, 'scope-world', 'warm-start', i);
    const task = scopeTaskOf(rng.pick(pool), rng.pick(ASKS));
    const solverSlip = slipOf(rng, SCOPE_SLIP_RATE.solver, ['wrong_query'], searchesOf(task.ask));
    const chain = pool.find((c) => c.town === task.town) as Chain;
    out.push(
      await rollout(
        solverMessages(task.question, SCOPE_SOLVER_MAX_SEARCHES, 'search_tags'),
        solverPolicy(task, solverSlip, otherChain(rng, pool, chain)),
        retriever,
        { role: SOLVER, finalTags: ['answer'], maxTurns: SCOPE_SOLVER_MAX_SEARCHES + 1 },
      ),
    );
    const source = rng.pick(pool);
    const budget = rng.pick(BUDGETS);
    const ask = rng.pick(ASKS);
    const challengerSlip = slipOf(rng, SCOPE_SLIP_RATE.challenger, ['wrong_query', 'premature_task'], budget);
    out.push(
      await rollout(
        challengerMessages(documentsOf(source)[0].text, 'long_form_qa', budget, 'search_tags'),
        challengerPolicy(source.town, budget, ask, challengerSlip, otherChain(rng, pool, source)),
        retriever,
        {
          role: CHALLENGER,
          finalTags: ['task'],
          maxTurns: budget + 2,
          searchLimit: { after: budget, notice: SEARCHES_COMPLETE },
        },
      ),
    );
  }
  return out;
}

/**
 * The warm start's tokenizer pieces (the kernel's `--split-words`, as SSP's world): the calls' tags, the
 * think token, the documents' fixed words, the questions' templates and both roles' prompts around their
 * document or question, each a token of its own, so a name is cut alike everywhere.
 */
export function scopeWordTokenizer(): { pieces: string[]; vocabSize: number } {
  const around = (messages: ChatMessage[]): string[] => messages.flatMap((m) => m.content.split('\0'));
  return {
    pieces: [
      THINK.trim(),
      ...['search', 'answer'].flatMap((tag) => [`<${tag}> `, ` </${tag}>`]),
      '<task> <question> ',
      ' </question> </task>',
      ' was founded by ',
      ' was born in ',
      ...ASKS.flatMap((ask) => QUESTION[ask]('\0').split('\0')),
      ...BUDGETS.flatMap((budget) => around(challengerMessages('\0', 'long_form_qa', budget, 'search_tags'))),
      ...around(solverMessages('\0', SCOPE_SOLVER_MAX_SEARCHES, 'search_tags')),
    ].filter((piece) => piece.length > 1),
    vocabSize: 850,
  };
}
