/**
 * SSP's warm-started model measured as it will play: each question run through SSP's own search loop
 * (`runSearchLoop`, the world's search settings) on the world's BM25 index, with the model served by the kernel.
 * The warm start's validation scores single completions; a search agent's success is its trajectory's.
 *
 *   node --import tsx infra/toy-world/ssp-validate.ts [--items N] [--samples K] [--warm-start-seed S]
 *                                                     [--warm-start-steps N] [--threads N]
 *
 * prints one JSON line per measure (training questions, held-out questions, proposals) and a summary.
 */
import { randomBytes } from 'node:crypto';
import { InferenceEndpoint } from '../../activities/clients/inference';
import { extractFinalAnswer, modelText } from '../../activities/recipes/ssp/parse';
import { proposerMessages, solverMessages } from '../../activities/recipes/ssp/prompts';
import { PROPOSER, SOLVER } from '../../activities/recipes/ssp/records';
import { loadRetriever } from '../../activities/retrieval/retriever';
import { runSearchLoop } from '../../activities/tools/search-loop';
import type { Retriever, Trajectory } from '../../activities/tools/types';
import type { ChatMessage } from '../../activities/clients/trainer-contract';
import { startKernel } from '../../test/support/kernel-process';
import { flag } from './prepare';
import {
  prepareSspWorld,
  SSP_WARM_START_DEFAULTS,
  sspWorldOptions,
  warmStartSspWorld,
  type SspWorld,
} from './ssp-prepare';
import {
  chains,
  exampleQuestions,
  HOPS,
  isValidProposal,
  SSP_WORLD_SEARCH,
  taskOf,
  type Chain,
  type Hops,
} from './ssp-world';

/** A role's trajectories scored: greedy (temperature 0) and sampled (temperature 1, `samples` each). */
export interface Measure {
  items: number;
  greedy: number;
  sampled: number;
  /** Mean searches per trajectory that gave a final answer or question (sampled). */
  searchesPerFinal: number;
  /** Per hop count: greedy and sampled. */
  byHops: Record<Hops, { greedy: number; sampled: number }>;
}

interface Case {
  hops: Hops;
  messages: ChatMessage[];
  /** Whether a trajectory is right (the solver's answer) or valid (the proposer's question). */
  score: (trajectory: Trajectory) => boolean;
}

const SOLVER_WITH = (question: string, answer: string, hops: Hops): Case => ({
  hops,
  messages: solverMessages(question),
  score: (trajectory) => extractFinalAnswer(modelText(trajectory)) === answer,
});

/** A proposal, valid by `isValidProposal`. */
const proposerCase = (world: readonly Chain[], examples: string[], answer: string, hops: Hops): Case => ({
  hops,
  messages: proposerMessages(answer, hops, examples),
  score: (trajectory) => isValidProposal(world, answer, hops, trajectory),
});

async function measure(
  llm: InferenceEndpoint,
  retriever: Retriever,
  role: string,
  finalTag: string,
  cases: Case[],
  samples: number,
): Promise<Measure> {
  const run = (c: Case, temperature: number, seed: number) =>
    runSearchLoop({
      llm,
      retriever,
      messages: c.messages,
      role,
      call: 'validate',
      seed,
      temperature,
      topP: 1,
      syntax: 'search_tags',
      finalTags: [finalTag],
      ...SSP_WORLD_SEARCH,
    });
  const results = await Promise.all(
    cases.map(async (c, i) => {
      const greedy = await run(c, 0, i);
      const drawn = await Promise.all(
        Array.from({ length: samples }, (_, k) => run(c, 1, 1000 + i * samples + k)),
      );
      return {
        hops: c.hops,
        greedy: Number(c.score(greedy)),
        sampled: drawn.map((t) => Number(c.score(t))),
        searches: drawn.filter((t) => t.stop === 'final').map((t) => t.searches.length),
      };
    }),
  );
  const mean = (xs: number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  const of = (rs: typeof results) => ({
    greedy: mean(rs.map((r) => r.greedy)),
    sampled: mean(rs.flatMap((r) => r.sampled)),
  });
  return {
    items: cases.length,
    ...of(results),
    searchesPerFinal: mean(results.flatMap((r) => r.searches)),
    byHops: Object.fromEntries(
      HOPS.map((h) => [h, of(results.filter((r) => r.hops === h))]),
    ) as Measure['byHops'],
  };
}

/** Training chains' questions (each chain asked once, hop counts alternating), held-out ones, and proposals. */
export async function validateSspModel(
  world: SspWorld,
  model: string,
  options: { seed: number; chains: number; items: number; samples: number },
): Promise<Record<'solverTraining' | 'solverHeldOut' | 'proposer', Measure>> {
  process.env.SELFPLAY_KERNEL_TOKEN ??= randomBytes(24).toString('hex');
  // One PyTorch thread: the machine is shared, and more threads only contend.
  const kernel = await startKernel({ model, policy: 'ssp-validate', env: { OMP_NUM_THREADS: '1' } });
  try {
    const llm = new InferenceEndpoint({
      baseUrl: `${kernel.url}/v1`,
      model: 'ssp-validate',
      apiKey: process.env.SELFPLAY_KERNEL_TOKEN,
      maxConcurrentCompletions: 32,
      supportsN: false,
      requestTimeoutMs: 300_000,
      maxRetries: 0,
    });
    const retriever = await loadRetriever(world.index, { apiKey: 'EMPTY' });
    const all = chains(options.seed, options.chains);
    const examples = exampleQuestions(options.seed, options.chains);
    const pick = (heldOut: boolean) => all.filter((c) => c.heldOut === heldOut).slice(0, options.items);
    const hopsOf = (i: number): Hops => (i % 2 === 0 ? 1 : 2);
    const questions = (heldOut: boolean): Case[] =>
      pick(heldOut).map((c, i) => {
        const task = taskOf(c, hopsOf(i));
        return SOLVER_WITH(task.question, task.answer, task.hops);
      });
    // Proposals from the back of the training chains, so they are not the solver's validation chains.
    const proposals = all
      .filter((c) => !c.heldOut)
      .slice(-options.items)
      .map((c, i) => proposerCase(all, examples, taskOf(c, hopsOf(i)).answer, hopsOf(i)));
    const solve = (cases: Case[]) => measure(llm, retriever, SOLVER, 'answer', cases, options.samples);
    return {
      solverTraining: await solve(questions(false)),
      solverHeldOut: await solve(questions(true)),
      proposer: await measure(llm, retriever, PROPOSER, 'question', proposals, options.samples),
    };
  } finally {
    await kernel.stop();
  }
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const number = (name: string, fallback: number): number => Number(flag(args, name) ?? fallback);
  void (async () => {
    const world = await prepareSspWorld();
    const options = sspWorldOptions(world);
    const threads = flag(args, '--threads');
    const trained = await warmStartSspWorld(world, {
      warmStartSeed: number('--warm-start-seed', SSP_WARM_START_DEFAULTS.warmStartSeed),
      steps: number('--warm-start-steps', SSP_WARM_START_DEFAULTS.steps),
      ...(threads ? { threads: Number(threads) } : {}),
    });
    const t0 = Date.now();
    const measured = await validateSspModel(world, trained.model, {
      ...options,
      items: number('--items', 64),
      samples: number('--samples', 2),
    });
    for (const [name, m] of Object.entries(measured)) console.log(JSON.stringify({ name, ...m }));
    console.log(`validated ${trained.model} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  })().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
