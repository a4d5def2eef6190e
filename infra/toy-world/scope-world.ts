/**
 * SCOPE's toy world: SSP's search world (ssp-world.ts: towns, their founders and the founders' birthplaces,
 * one sentence per document, a quarter of the chains held out) with SCOPE's two policies and its frozen judge
 * answered by rule (scope-grader.ts). A task asks for one fact or two of a chain:
 * "Which person founded the town of Belawick?" (its rubric: the founder) or "Which person founded the town of
 * Belawick, and where was that person born?" (the founder, then the birthplace, two rubrics).
 *
 * - **Source documents** are the training chains' town documents (`scopeSourceCorpus`, the run's
 *   `corpus.uri`); the index holds every chain's documents, held-out ones included, so the agents can find
 *   them, but no source document, warm-start example or slip names a held-out entity.
 * - **The Challenger** searches its source town, and with a budget of two the founder its results name, then
 *   writes the task of as many facts as it searched: the rubric writer (with the retrieved passages as
 *   context, `rubricContext: source_and_retrieved`) then finds a rubric per fact. Its slips: a wrong query
 *   (another training town, so its task names nothing of the source document and fails relevance) or a
 *   premature task (before its last search: fewer facts, a lower format score).
 * - **The Solver** searches the question's town, then (two facts) the founder it read, and answers with the
 *   names it read, "Corenric, Halormoor". Its slip is a wrong query (another chain's town or founder: its
 *   names are then that chain's), not SSP's premature answer, which SCOPE's format terms would punish
 *   whatever the grader (`solverPolicy`).
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

/** Facts a task asks for: the founder, or the founder and the birthplace. */
export type Facts = 1 | 2;
export const FACT_COUNTS: readonly Facts[] = [1, 2];

/** The Solver's searches (`scope.solverMaxSearches`): the two a two-fact task needs. */
export const SCOPE_SOLVER_MAX_SEARCHES = 2;

/** The share of each teacher's trajectories that slip; placeholders until a warm start measures the headroom. */
export const SCOPE_SLIP_RATE = { challenger: 0.25, solver: { 1: 0.25, 2: 0.5 } as Record<Facts, number> };

const THINK = '<think> next </think> ';

const QUESTION: Record<Facts, (town: string) => string> = {
  1: (town) => `Which person founded the town of ${town}?`,
  2: (town) => `Which person founded the town of ${town}, and where was that person born?`,
};

export interface ScopeTask {
  facts: Facts;
  town: string;
  question: string;
  /** The names a full answer gives, in the order the searches reach them. */
  answer: string[];
}

export function scopeTaskOf(chain: Chain, facts: Facts): ScopeTask {
  return {
    facts,
    town: chain.town,
    question: QUESTION[facts](chain.town),
    answer: facts === 1 ? [chain.founder] : [chain.founder, chain.birthplace],
  };
}

/** The task a question of the world asks, read back from its text; undefined for any other text. */
export function parseScopeQuestion(question: string): { facts: Facts; town: string } | undefined {
  for (const facts of [2, 1] as const) {
    const [before, after] = QUESTION[facts]('\0').split('\0') as [string, string];
    if (question.startsWith(before) && question.endsWith(after)) {
      const town = question.slice(before.length, question.length - after.length);
      if (/^[A-Z][a-z]+$/.test(town)) return { facts, town };
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
 * SSP's benchmark asks about, in its order, one and two facts alternately. `answer` is the full answer's
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
    const task = scopeTaskOf(chain, FACT_COUNTS[i % 2] as Facts);
    return { id: item.id, question: task.question, answer: task.answer.join(', ') };
  });
}

const search = (query: string): string => `${THINK}<search> ${query} </search>`;
const answerTag = (names: readonly string[]): string => `${THINK}<answer> ${names.join(', ')} </answer>`;
const taskTag = (question: string): string => `${THINK}<task> <question> ${question} </question> </task>`;

type Slip<K extends string> = { kind: K; step: number } | undefined;

/**
 * The Solver teacher: searches the question's town, then (two facts) the founder it read, and answers with
 * what it read; `slip` searches `decoy` at `slip.step` instead. Its only slip is a wrong query, never an early
 * answer: an early answer also loses SCOPE's format and search terms (R_S = L·g + 0.5·F + 0.1·S), which pay
 * for searching whatever the grades, so a Solver that RL cures of it would gain under a grader that grades at
 * random. A wrong query searches and answers as often as a right one: only the grades tell them apart.
 */
function solverPolicy(task: ScopeTask, slip: Slip<'wrong_query'>, decoy: Chain): Policy {
  return (completion) => {
    const { queries, information } = progress(completion);
    const step = queries.length;
    const slips = slip?.step === step;
    if (step === 0) return search(slips ? decoy.town : task.town);
    const read = linkOf(information, queries.at(-1) as string);
    const names = [...queries.slice(1), ...(read === undefined ? [] : [read])];
    if (read === undefined || step === task.facts) return answerTag(names);
    return search(slips ? decoy.founder : read);
  };
}

/**
 * The Challenger teacher: searches its source town, then the founder the results name, as many searches as
 * its budget, and writes the task of as many facts about the town it searched first; `slip` searches `decoy`
 * or writes the task early at `slip.step`.
 */
function challengerPolicy(
  town: string,
  budget: Facts,
  slip: Slip<'wrong_query' | 'premature_task'>,
  decoy: Chain,
): Policy {
  return (completion) => {
    const { queries, information } = progress(completion);
    const step = queries.length;
    const slips = (kind: string): boolean => slip?.step === step && slip.kind === kind;
    if (step === budget || slips('premature_task'))
      return taskTag(QUESTION[step === 2 ? 2 : 1](queries[0] ?? town));
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
 * Supervised warm-start examples, per index: one Solver trajectory (a training chain and a fact count drawn
 * uniformly) and one Challenger trajectory (a training town document and a budget of one or two searches),
 * each slipping at its rate, each with the loop's `lossMaskSpans`.
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
    const task = scopeTaskOf(rng.pick(pool), rng.pick(FACT_COUNTS));
    const solverSlip = slipOf(rng, SCOPE_SLIP_RATE.solver[task.facts], ['wrong_query'], task.facts);
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
    const budget = rng.pick(FACT_COUNTS);
    const challengerSlip = slipOf(rng, SCOPE_SLIP_RATE.challenger, ['wrong_query', 'premature_task'], budget);
    out.push(
      await rollout(
        challengerMessages(documentsOf(source)[0].text, 'long_form_qa', budget, 'search_tags'),
        challengerPolicy(source.town, budget, challengerSlip, otherChain(rng, pool, source)),
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
      ...FACT_COUNTS.flatMap((facts) => QUESTION[facts]('\0').split('\0')),
      ...FACT_COUNTS.flatMap((budget) =>
        around(challengerMessages('\0', 'long_form_qa', budget, 'search_tags')),
      ),
      ...around(solverMessages('\0', SCOPE_SOLVER_MAX_SEARCHES, 'search_tags')),
    ].filter((piece) => piece.length > 1),
    vocabSize: 850,
  };
}
