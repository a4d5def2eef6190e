import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SCOPE_CALLS } from '../../activities/clients/llm-protocol';
import { putJsonl } from '../../activities/clients/storage/codec';
import { openStore } from '../../activities/clients/storage';
import { parseBinaryScore } from '../../activities/judges/binary';
import { extractAnswer, parseRubrics, parseTask } from '../../activities/recipes/scope/parse';
import {
  challengerMessages,
  graderMessages,
  identifiabilityMessages,
  relevanceMessages,
  rubricMessages,
  solverMessages,
} from '../../activities/recipes/scope/prompts';
import { buildIndex } from '../../activities/retrieval/build';
import { forgetRetrievers, loadRetriever } from '../../activities/retrieval/retriever';
import { tagContents } from '../../activities/scoring/tags';
import type { ChatMessage } from '../../activities/clients/trainer-contract';
import type { BenchmarkResult } from '../../contracts/evaluation';
import { scopeGrader } from '../../infra/toy-world/scope-grader';
import { scopeHeldOutScore, scopePoint } from '../../infra/toy-world/scope-learning';
import { shardKey } from '../../activities/clients/storage/keys';
import type { ScopeGated, ScopeJudged } from '../../activities/recipes/scope/records';
import type { Manifest } from '../../contracts/selfplay';
import {
  parseScopeQuestion,
  SCOPE_SOLVER_MAX_SEARCHES,
  searchesOf,
  scopeHeldOutBenchmark,
  scopeSourceCorpus,
  scopeWarmStartExamples,
} from '../../infra/toy-world/scope-world';
import { chains, documentsOf, sspCorpus, type SearchExample } from '../../infra/toy-world/ssp-world';
import { writeJsonl } from '../support/search-corpus';

/**
 * SCOPE's toy world (infra/toy-world/scope-world.ts): examples rendered by SCOPE's prompts through the search
 * loop on the real index, no held-out entity in anything trained on, the rule-based grader passing what the
 * teachers write when they do not slip, and the held-out rubric score read back from stored evaluation items.
 */
const SEED = 0;
const CHAINS = 128;
const WORLD = chains(SEED, CHAINS);
const DOCUMENTS = sspCorpus(SEED, CHAINS);

let dir: string;
let corpus: string;
let examples: SearchExample[];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'scope-world-'));
  corpus = await writeJsonl(path.join(dir, 'corpus.jsonl'), DOCUMENTS);
  await buildIndex({ corpus, out: path.join(dir, 'bm25'), kind: 'bm25' });
  examples = await scopeWarmStartExamples(
    SEED,
    CHAINS,
    200,
    await loadRetriever(path.join(dir, 'bm25'), { apiKey: 'EMPTY' }),
  );
});
afterAll(async () => {
  forgetRetrievers();
  await rm(dir, { recursive: true, force: true });
});

const text = (messages: ChatMessage[]): string => messages.map((m) => m.content).join('\n');
const words = (t: string): Set<string> => new Set(t.match(/[A-Za-z]+/g) ?? []);
const grader = scopeGrader({ documents: DOCUMENTS }, 'rule');
const verdict = (call: string, messages: ChatMessage[]): number =>
  parseBinaryScore(grader.answer(call, text(messages), 0)).value;
const of = (role: string) => examples.filter((e) => e.role === role);

describe("SCOPE's toy world", () => {
  test('no held-out entity is named by a source document or a warm-start example; the benchmark asks only them', () => {
    const held = WORLD.filter((c) => c.heldOut);
    const heldNames = new Set(held.flatMap((c) => [c.town, c.founder, c.birthplace]));
    const trained = [
      ...scopeSourceCorpus(SEED, CHAINS).map((d) => d.text),
      ...examples.map((e) => `${text(e.messages)}\n${e.completion}`),
    ];
    const named = new Set(trained.flatMap((t) => [...words(t)]));
    expect([...heldNames].filter((n) => named.has(n))).toEqual([]);
    expect(WORLD.filter((c) => !c.heldOut && named.has(c.town)).length).toBeGreaterThan(CHAINS / 2);
    for (const item of scopeHeldOutBenchmark(SEED, CHAINS, 2 * held.length)) {
      const town = parseScopeQuestion(item.question)?.town;
      expect(held.some((c) => c.town === town)).toBe(true);
    }
  });

  test("every example is SCOPE's own prompt and the loop's observations, and both roles slip sometimes", () => {
    const solvers = of('solver');
    const challengers = of('challenger');
    expect(solvers).toHaveLength(200);
    expect(challengers).toHaveLength(200);
    for (const e of solvers) {
      const question = /Question: (.*)$/.exec(text(e.messages))?.[1] ?? '';
      expect(e.messages).toEqual(solverMessages(question, SCOPE_SOLVER_MAX_SEARCHES, 'search_tags'));
    }
    for (const e of challengers) {
      const source = /<source_document>\n([\s\S]*?)\n<\/source_document>/.exec(text(e.messages))?.[1] ?? '';
      const budget = Number(/exactly \*\*(\d)\*\*/.exec(text(e.messages))?.[1]);
      expect(e.messages).toEqual(challengerMessages(source, 'long_form_qa', budget, 'search_tags'));
    }
    for (const e of examples) {
      const blocks = [...e.completion.matchAll(/\n<information>\n[\s\S]*?<\/information>\n\n/g)];
      expect(e.lossMaskSpans).toEqual(blocks.map((b) => [b.index, (b.index ?? 0) + b[0].length]));
    }
    // What the grader makes of them: most, not all, tasks pass both gates; most, not all, answers score 1.
    const passed = challengers.filter((e) => {
      const task = parseTask(e.completion) ?? '';
      const source = /<source_document>\n([\s\S]*?)\n<\/source_document>/.exec(text(e.messages))?.[1] ?? '';
      return (
        verdict(SCOPE_CALLS.gateIdentifiability, identifiabilityMessages(task)) === 1 &&
        verdict(SCOPE_CALLS.gateRelevance, relevanceMessages(source, task)) === 1
      );
    }).length;
    expect(passed / challengers.length).toBeGreaterThan(0.8);
    expect(passed).toBeLessThan(challengers.length);
    // Most Challengers search their whole budget; the premature tasks do not.
    const budgeted = challengers.filter(
      (e) =>
        tagContents(e.completion, 'search').length ===
        Number(/exactly \*\*(\d)\*\*/.exec(text(e.messages))?.[1]),
    ).length;
    expect(budgeted).toBeGreaterThan(challengers.length / 2);
    expect(budgeted).toBeLessThan(challengers.length);
    // The ladder: after two searches the Challenger asks any of the three, after one the founder only.
    const asksAfter = (searches: number): Record<string, number> => {
      const asks: Record<string, number> = {};
      for (const e of challengers.filter((c) => tagContents(c.completion, 'search').length === searches)) {
        const ask = parseScopeQuestion(parseTask(e.completion) ?? '')?.ask;
        asks[ask ?? 'none'] = (asks[ask ?? 'none'] ?? 0) + 1;
      }
      return asks;
    };
    expect(Object.keys(asksAfter(1))).toEqual(['founder']);
    const two = asksAfter(2);
    expect(Object.keys(two).sort()).toEqual(['birthplace', 'both', 'founder']);
    for (const n of Object.values(two)) expect(n).toBeGreaterThan(15);
    const scores = solvers.map((e) =>
      solverRubricScore(/Question: (.*)$/.exec(text(e.messages))?.[1] ?? '', e.completion),
    );
    const perfect = scores.filter((s) => s === 1).length;
    expect(perfect / scores.length).toBeGreaterThan(0.5);
    expect(perfect).toBeLessThan(scores.length);
    // Every Solver searches as often as its ask needs and then answers, slipped or not: SCOPE's format and
    // search terms pay a wrong answer what they pay a right one, so only the grades tell them apart.
    for (const e of solvers) {
      const asked = parseScopeQuestion(/Question: (.*)$/.exec(text(e.messages))?.[1] ?? '');
      expect(tagContents(e.completion, 'search')).toHaveLength(asked ? searchesOf(asked.ask) : -1);
      expect(tagContents(e.completion, 'answer')).toHaveLength(1);
    }
  });

  test('the held-out rubric score: each stored sample graded against its item’s rubrics, averaged, and per ask', async () => {
    const bench = scopeHeldOutBenchmark(SEED, CHAINS, 3);
    const [one, two, three] = bench as [(typeof bench)[0], (typeof bench)[0], (typeof bench)[0]];
    expect(bench.map((item) => parseScopeQuestion(item.question)?.ask)).toEqual([
      'founder',
      'both',
      'birthplace',
    ]);
    const heldOut = await writeJsonl(path.join(dir, 'heldout.jsonl'), bench);
    const store = openStore(path.join(dir, 'store'));
    const sample = (answer: string) => ({ completion: `<answer> ${answer} </answer>`, correct: false });
    const [founder, birthplace] = two.answer.split(', ');
    const chain = WORLD.find((c) => c.birthplace === three.answer) as (typeof WORLD)[0];
    const item = (unit: number, of: typeof one, answers: string[]) => ({
      unit,
      id: of.id,
      kind: 'text',
      gold: of.answer,
      samples: answers.map(sample),
    });
    await putJsonl(store, 'results.jsonl', [
      item(0, one, [one.answer, 'nobody']),
      item(1, two, [`${founder}`, `${founder}, ${birthplace}`]),
      // The birthplace ask has one rubric, the birthplace: its founder alone earns nothing.
      item(2, three, [chain.founder, three.answer]),
    ]);
    const score = scopeHeldOutScore(corpus, heldOut);
    const measured = await score(store, { accuracy: 0, resultsKey: 'results.jsonl' } as BenchmarkResult);
    // Item 1: 1 and 0; item 2: 1/2 (the founder only) and 1; item 3: 0 and 1.
    expect(measured.accuracy).toBeCloseTo((0.5 + 0.75 + 0.5) / 3, 9);
    expect(measured.byKind).toEqual({ founder: 0.5, both: 0.75, birthplace: 0.5 });
    expect(measured.standardError).toBeGreaterThan(0);
  });
});

describe("SCOPE's toy world, per iteration", () => {
  test('the Challenger’s valid tasks by ask: their shares, their ḡ and the f_diff they earn', async () => {
    const store = openStore(path.join(dir, 'point-store'));
    const runId = 'run-point';
    const [c1, c2] = WORLD as [(typeof WORLD)[0], (typeof WORLD)[0]];
    const grades = (...bits: Array<0 | 1>) => ({ answer: 'x', grades: bits.map((value) => ({ value })) });
    const gated: ScopeGated[] = [
      {
        unit: 0,
        docIndex: 0,
        candidates: [
          { status: 'valid', question: `Which person founded the town of ${c1.town}?` },
          { status: 'gate_relevance' },
          { status: 'valid', question: `Where was the person who founded the town of ${c1.town} born?` },
          { status: 'valid', question: `Which person founded the town of ${c2.town}?` },
        ],
      },
    ];
    const judged: ScopeJudged[] = [
      {
        unit: 0,
        docIndex: 0,
        candidates: [
          { rollouts: [grades(1), grades(1)] }, // ḡ 1: f_diff 0
          { rollouts: [] },
          { rollouts: [grades(1), grades(0)] }, // ḡ 0.5: f_diff 1
          { rollouts: [grades(1), grades(0, 1)] }, // ḡ 0.75: f_diff 0.5
        ],
      },
    ];
    await putJsonl(store, shardKey(runId, 1, 'gate', 0), gated);
    await putJsonl(store, shardKey(runId, 1, 'judge', 0), judged);
    const point = await scopePoint({ store, runId, iteration: 1, manifest: {} as Manifest, rows: [] });
    expect(point.validTasks).toBe(3);
    expect(point.statusShares).toEqual({ valid: 0.75, gate_relevance: 0.25 });
    expect(point.challengerRubricScore).toBeCloseTo((1 + 0.5 + 0.75) / 3, 9);
    expect(point.challengerDifficultyReward).toBeCloseTo((0 + 1 + 0.5) / 3, 9);
    expect(point.asks['founder']?.share).toBeCloseTo(2 / 3, 9);
    expect(point.asks['founder']?.rubricScore).toBeCloseTo(0.875, 9);
    expect(point.asks['birthplace']).toEqual({ share: 1 / 3, rubricScore: 0.5 });
    expect(point.asks['both']).toBeUndefined();
  });
});

/** The rule grader's rubric score of a Solver answer to a world task, its rubrics from the chain's documents. */
function solverRubricScore(question: string, completion: string): number {
  const asked = parseScopeQuestion(question);
  const chain = WORLD.find((c) => c.town === asked?.town);
  if (!asked || !chain) throw new Error(`not a task of the world: ${question}`);
  const [townDoc, personDoc] = documentsOf(chain);
  const context = searchesOf(asked.ask) === 1 ? [townDoc.text] : [townDoc.text, personDoc.text];
  const rubrics = parseRubrics(
    grader.answer(SCOPE_CALLS.rubrics, text(rubricMessages('long_form_qa', question, context)), 0),
    { min: 1, max: 5 },
  );
  expect(rubrics).toHaveLength(asked.ask === 'both' ? 2 : 1);
  const answer = extractAnswer(completion) ?? '';
  const grades = rubrics.map((r) => verdict(SCOPE_CALLS.grade, graderMessages(question, answer, r)));
  return grades.reduce((a, b) => a + b, 0) / grades.length;
}
