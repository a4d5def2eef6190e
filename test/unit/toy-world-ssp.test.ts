import { readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SSP_DEFAULTS } from '../../config/presets/ssp';
import { putJsonl } from '../../activities/clients/storage/codec';
import { openStore } from '../../activities/clients/storage';
import type { BenchmarkResult } from '../../contracts/evaluation';
import { forgetCorpora } from '../../activities/corpus/corpus';
import { loadBenchmark } from '../../activities/evaluation/benchmarks';
import { loadAnswers } from '../../activities/recipes/ssp/answers';
import { buildIndex } from '../../activities/retrieval/build';
import { INDEX_KEYS } from '../../activities/retrieval/manifest';
import { forgetRetrievers, loadRetriever } from '../../activities/retrieval/retriever';
import { extractFinalAnswer, extractQuestion, modelText } from '../../activities/recipes/ssp/parse';
import { proposerMessages, solverMessages } from '../../activities/recipes/ssp/prompts';
import { ruleFilter } from '../../activities/recipes/ssp/rules';
import { tagContents } from '../../activities/scoring/tags';
import { resultsObservation } from '../../activities/tools/observation';
import type { Retriever } from '../../activities/tools/types';
import {
  chains,
  exampleQuestions,
  heldOutBenchmark,
  isValidProposal,
  parseQuestion,
  SLIP_RATE,
  sspWordTokenizer,
  SSP_WORLD_SEARCH,
  sspAnswers,
  sspCorpus,
  sspWarmStartExamples,
  taskOf,
  type SearchExample,
} from '../../infra/toy-world/ssp-world';
import { sspHeldOutScore } from '../../infra/toy-world/ssp-learning';
import { prepareSspWorld, randomSearchIndex } from '../../infra/toy-world/ssp-prepare';
import { writeJsonl } from '../support/search-corpus';

/**
 * SSP's toy world (infra/toy-world/ssp-world.ts): held-out entities that nothing the model trains on or is
 * asked to propose from names, examples rendered by SSP's prompts and search loop with the real BM25 index's
 * results, and teacher slips at their rates per hop count.
 */
const SEED = 0;
const CHAINS = 256;
const WORLD = chains(SEED, CHAINS);

let dir: string;
let retriever: Retriever;
let examples: SearchExample[];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ssp-world-'));
  const corpus = await writeJsonl(path.join(dir, 'corpus.jsonl'), sspCorpus(SEED, CHAINS));
  await buildIndex({ corpus, out: path.join(dir, 'bm25'), kind: 'bm25' });
  retriever = await loadRetriever(path.join(dir, 'bm25'), { apiKey: 'EMPTY' });
  examples = await sspWarmStartExamples(SEED, CHAINS, 800, retriever);
});
afterAll(async () => {
  forgetCorpora();
  forgetRetrievers();
  await rm(dir, { recursive: true, force: true });
});

const textOf = (e: SearchExample): string => [...e.messages.map((m) => m.content), e.completion].join('\n');
const words = (text: string): Set<string> => new Set(text.match(/[A-Za-z]+/g) ?? []);

describe("SSP's toy world", () => {
  test('every entity has a one-word name of its own, and a quarter of the chains are held out', () => {
    const world = WORLD;
    const names = world.flatMap((c) => [c.town, c.founder, c.birthplace]);
    for (const name of names) expect(name).toMatch(/^[A-Z][a-z]+$/);
    expect(new Set(names).size).toBe(names.length);
    expect(world.filter((c) => c.heldOut)).toHaveLength(CHAINS / 4);
    expect(chains(SEED, CHAINS)).toEqual(world);
    expect(chains(SEED + 1, CHAINS)).not.toEqual(world);
  });

  test('no held-out entity is named by D, its examples or any warm-start example; each is in the index', async () => {
    const held = WORLD.filter((c) => c.heldOut);
    const heldNames = new Set(held.flatMap((c) => [c.town, c.founder, c.birthplace]));
    const trained = [
      ...sspAnswers(SEED, CHAINS).flatMap((a) => [a.answer, ...a.examples]),
      ...examples.map(textOf),
    ];
    const named = new Set(trained.flatMap((t) => [...words(t)]));
    expect([...heldNames].filter((n) => named.has(n))).toEqual([]);
    // The check is not vacuous: the training entities are named, by D and by the warm start.
    const trainingTowns = WORLD.filter((c) => !c.heldOut);
    expect(trainingTowns.filter((c) => named.has(c.town)).length).toBeGreaterThan(0.9 * trainingTowns.length);

    // The benchmark asks only about held-out chains, and the agent can find their documents.
    const bench = heldOutBenchmark(SEED, CHAINS, 2 * held.length);
    expect(new Set(bench.map((b) => b.question)).size).toBe(bench.length);
    for (const item of bench) {
      const asked = parseQuestion(item.question);
      const chain = held.find((c) => c.town === asked?.town);
      expect(chain && taskOf(chain, asked?.hops ?? 1).answer).toBe(item.answer);
    }
    for (const chain of held.slice(0, 16)) {
      const [first] = await retriever.search(chain.town, { topK: 3, maxTokens: 500 });
      expect(first?.text).toBe(`${chain.town} was founded by ${chain.founder}.`);
    }
  });

  test("every example is SSP's own prompt, and every <information> block is the real BM25 index's answer", async () => {
    for (const e of examples.slice(0, 200)) {
      const queries = tagContents(e.completion, 'search');
      const blocks = [...e.completion.matchAll(/\n<information>\n[\s\S]*?<\/information>\n\n/g)];
      expect(blocks).toHaveLength(queries.length);
      // The loss mask is exactly the observations: what the model wrote is what is left.
      expect(e.lossMaskSpans).toEqual(blocks.map((b) => [b.index, (b.index ?? 0) + b[0].length]));
      for (const [i, query] of queries.entries()) {
        const passages = await retriever.search(query, {
          topK: SSP_WORLD_SEARCH.topK,
          maxTokens: SSP_WORLD_SEARCH.passageTokens,
        });
        expect(blocks[i]?.[0]).toBe(resultsObservation(passages));
      }
      const user = e.messages.at(-1)?.content ?? '';
      if (e.role === 'solver') {
        const asked = /Question: (.*)$/.exec(user)?.[1] ?? '';
        expect(e.messages).toEqual(solverMessages(asked));
        expect(modelText(e)).toMatch(
          /^(<search> [A-Z][a-z]+ <\/search>){0,2}<answer> [A-Z][a-z]+ <\/answer>$/,
        );
      } else {
        const given =
          /The answer I provided is: ([A-Za-z]+)\. You need to create a question that requires (\d)/.exec(
            user,
          );
        expect(e.messages).toEqual(
          proposerMessages(given?.[1] ?? '', Number(given?.[2]), exampleQuestions(SEED, CHAINS)),
        );
      }
    }
  });

  test('the solver teacher answers right except for its slips, at their rate per hop count', () => {
    const byHops = new Map<number, { right: number; all: number }>();
    for (const e of examples.filter((x) => x.role === 'solver')) {
      const asked = parseQuestion(/Question: (.*)$/.exec(e.messages.at(-1)?.content ?? '')?.[1] ?? '');
      if (!asked) throw new Error(`not a world question: ${e.messages.at(-1)?.content}`);
      const chain = WORLD.find((c) => c.town === asked.town);
      const right =
        chain !== undefined && extractFinalAnswer(e.completion) === taskOf(chain, asked.hops).answer;
      // A right answer comes only after the searches it needs.
      if (right) expect(tagContents(e.completion, 'search')).toHaveLength(asked.hops);
      const tally = byHops.get(asked.hops) ?? { right: 0, all: 0 };
      byHops.set(asked.hops, { right: tally.right + Number(right), all: tally.all + 1 });
    }
    for (const hops of [1, 2] as const) {
      const { right, all } = byHops.get(hops) ?? { right: 0, all: 0 };
      expect(all).toBeGreaterThan(300);
      expect(Math.abs(right / all - (1 - SLIP_RATE[hops]))).toBeLessThan(0.07);
    }
  });

  test("the proposer teacher's questions pass SSP's rule filter and ask for its answer", () => {
    const proposals = examples.filter((e) => e.role === 'proposer');
    expect(proposals.length).toBeGreaterThan(150);
    for (const e of proposals) {
      const given =
        /The answer I provided is: ([A-Za-z]+)\. You need to create a question that requires (\d)/.exec(
          e.messages.at(-1)?.content ?? '',
        );
      const [answer, n] = [given?.[1] ?? '', Number(given?.[2])];
      const written = extractQuestion(modelText(e));
      const searches = tagContents(e.completion, 'search');
      const failure = ruleFilter(
        { question: written, answer, searchTurns: n, searches, informationBlocks: searches.length },
        SSP_DEFAULTS.rules,
      );
      expect({ written, failure }).toEqual({ written, failure: undefined });
      const asked = parseQuestion(written ?? '');
      const chain = WORLD.find((c) => c.town === asked?.town);
      expect({ hops: asked?.hops, answer: chain && taskOf(chain, asked?.hops ?? 1).answer }).toEqual({
        hops: n,
        answer,
      });
      // What agentic validation counts as a valid proposal (ssp-validate.ts), and not for another hop count.
      const trajectory = { ...e, searches };
      expect(isValidProposal(WORLD, answer, n as 1 | 2, trajectory)).toBe(true);
      expect(isValidProposal(WORLD, answer, n === 1 ? 2 : 1, trajectory)).toBe(false);
    }
  });
});

test("the word tokenizer's pieces are the examples' fixed text, and name only the proposer's example town", () => {
  const names = WORLD.flatMap((c) => [c.town, c.founder, c.birthplace]);
  // The proposer's prompt shows example questions about the first training town: a piece holds that name only.
  const exampleTown = WORLD.find((c) => !c.heldOut)?.town;
  for (const piece of sspWordTokenizer(SEED, CHAINS).pieces) {
    expect({ piece, used: examples.some((e) => textOf(e).includes(piece)) }).toEqual({ piece, used: true });
    expect(names.filter((name) => piece.includes(name) && name !== exampleTown)).toEqual([]);
  }
});

describe('prepareSspWorld', () => {
  test('writes the world into a folder named by its contents, once, with an index that finds held-out documents', async () => {
    const parent = path.join(dir, 'worlds');
    const options = { dir: parent, chains: 64, heldOutItems: 16, warmStartItems: 40 };
    const world = await prepareSspWorld(options);
    expect(path.dirname(world.dir)).toBe(parent);
    const rows = (file: string): Array<Record<string, unknown>> =>
      readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(rows(world.corpus)).toEqual(sspCorpus(0, 64));
    expect(rows(world.answers)).toEqual(sspAnswers(0, 64));
    expect(rows(world.heldOut)).toEqual(heldOutBenchmark(0, 64, 16));
    const warm = rows(world.warmStart);
    expect(warm.filter((r) => r.role === 'solver')).toHaveLength(40);
    for (const r of warm)
      expect(Object.keys(r).sort()).toEqual(['completion', 'lossMaskSpans', 'messages', 'role']);

    // The run reads D and agentic evaluation reads the benchmark with their own loaders.
    const d = await loadAnswers({ answers: world.answers, defaultSearchTurns: 2 });
    expect(d.map((a) => a.searchTurns)).toEqual(sspAnswers(0, 64).map((a) => a.search_turns));
    const bench = await loadBenchmark(world.heldOut, undefined, 'held-out');
    expect(bench.format).toBe('simple');
    expect(bench.items.map(({ question, answer, kind }) => ({ question, answer, kind }))).toEqual(
      heldOutBenchmark(0, 64, 16).map(({ question, answer }) => ({ question, answer, kind: 'string' })),
    );

    // The world's own index answers a held-out question's first search with its town's document.
    const index = await loadRetriever(world.index, { apiKey: 'EMPTY' });
    const [item] = rows(world.heldOut);
    const town = parseQuestion(String(item?.question))?.town ?? '';
    const [first] = await index.search(town, { topK: 3, maxTokens: 500 });
    expect(first?.title).toBe(town);

    // A second call reuses the folder untouched; another world gets another folder.
    const built = statSync(path.join(world.index, INDEX_KEYS.manifest)).mtimeMs;
    expect(await prepareSspWorld(options)).toEqual(world);
    expect(statSync(path.join(world.index, INDEX_KEYS.manifest)).mtimeMs).toBe(built);
    expect((await prepareSspWorld({ ...options, seed: 1 })).dir).not.toBe(world.dir);
  });

  test("the random-search control's index answers every search with passages of other entries", async () => {
    const world = await prepareSspWorld({
      dir: path.join(dir, 'random'),
      chains: 64,
      heldOutItems: 16,
      warmStartItems: 8,
    });
    const random = await loadRetriever(await randomSearchIndex(world), { apiKey: 'EMPTY' });
    const real = await loadRetriever(world.index, { apiKey: 'EMPTY' });
    const towns = chains(0, 64).map((c) => c.town);
    for (const town of towns) {
      const [hit] = await random.search(town, { topK: 3, maxTokens: 500 });
      expect(hit).toBeDefined();
      expect(hit?.text).not.toContain(town);
      // The same query gets the same unrelated passages: the tool is consistent, only useless.
      expect(await random.search(town, { topK: 3, maxTokens: 500 })).toEqual(
        await random.search(town, { topK: 3, maxTokens: 500 }),
      );
    }
    const [realHit] = await real.search(towns[0] ?? '', { topK: 3, maxTokens: 500 });
    expect(realHit?.text).toContain(towns[0]);
    // Written once: a second call returns the same folder.
    expect(await randomSearchIndex(world)).toBe(path.join(world.dir, 'index-random-search'));
  });
});

test("the held-out score: the evaluation's accuracy, and per hop count from the stored items", async () => {
  const bench = heldOutBenchmark(SEED, CHAINS, 4);
  const oneHop = bench.filter((b) => parseQuestion(b.question)?.hops === 1);
  const twoHop = bench.filter((b) => parseQuestion(b.question)?.hops === 2);
  expect([oneHop.length, twoHop.length]).toEqual([2, 2]);
  const heldOut = await writeJsonl(path.join(dir, 'heldout.jsonl'), bench);
  const store = openStore(path.join(dir, 'store'));
  const item = (b: (typeof bench)[0], unit: number, correct: boolean[]) => ({
    unit,
    id: b.id,
    kind: 'text',
    gold: b.answer,
    samples: correct.map((c) => ({ completion: '<answer> x </answer>', extracted: 'x', correct: c })),
  });
  await putJsonl(store, 'results.jsonl', [
    item(oneHop[0]!, 0, [true, true]),
    item(oneHop[1]!, 1, [true, false]),
    item(twoHop[0]!, 2, [false, false]),
    item(twoHop[1]!, 3, [true, false]),
  ]);
  const result = { accuracy: 0.5, standardError: 0.1, resultsKey: 'results.jsonl' } as BenchmarkResult;
  await expect(sspHeldOutScore(heldOut)(store, result)).resolves.toEqual({
    accuracy: 0.5,
    standardError: 0.1,
    byKind: { '1-hop': 0.75, '2-hop': 0.25 },
  });
  // An item the world's held-out file does not hold is an error, not a kind of its own.
  await putJsonl(store, 'stray.jsonl', [{ ...item(oneHop[0]!, 0, [true]), id: 'stray' }]);
  await expect(sspHeldOutScore(heldOut)(store, { ...result, resultsKey: 'stray.jsonl' })).rejects.toThrow(
    /held-out item stray is not a question of/,
  );
});
