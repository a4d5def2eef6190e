import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildIndex } from '../../activities/retrieval/build';
import { buildScriptedModel } from './kernel-process';
import type { KernelRun } from './kernel-run';

/**
 * What the search-agent recipes need on real training kernels: scripted agent models and a real BM25 index.
 *
 * A random model never closes a search call, so the models are the kernel's tiny one rewritten into seeded
 * bigram chains (test/support/scripted_model.py): each turn (after the generation prompt or an observation,
 * both ending in a newline) writes `<search> river</search>`, a final tag or nothing, with set probabilities.
 * Rollouts of one prompt then differ in their searches and answers, and earn different rewards.
 */

/** A final tag's words (one token each, drawn uniformly) and the weight of writing that tag in a turn. */
export interface FinalTag {
  words: string[];
  weight: number;
}

/** `<search> river</search>` with weight `search`, `<TAG> WORD</TAG>` for each final, else EOS. */
export function agentModel(search: number, finals: Record<string, FinalTag>, stop: number): string {
  const chain: Record<string, Record<string, number>> = {
    '\n': { '<search>': search, EOS: stop },
    '<search>': { ' river': 1 },
    ' river': { '</search>': 1 },
  };
  for (const [tag, { words, weight }] of Object.entries(finals)) {
    chain['\n']![`<${tag}>`] = weight;
    chain[`<${tag}>`] = Object.fromEntries(words.map((w) => [` ${w}`, 1]));
    for (const w of words) chain[` ${w}`] = { [`</${tag}>`]: 1 };
    chain[`</${tag}>`] = { EOS: 1 };
  }
  const tags = Object.keys(finals).flatMap((t) => [`<${t}>`, `</${t}>`]);
  return buildScriptedModel({ tokens: ['<search>', '</search>', ...tags], chain });
}

/** The agent of SSP's kernel runs: it searches or stops, and never writes a question or an answer. */
export const sspAgentModel = (): string => agentModel(4, {}, 1);

/**
 * An SSP run config on one kernel (`run.runId` plays every role): two answer slots, three turns, small
 * decodes for the verifier and the judge.
 */
export function sspKernelConfig(run: KernelRun, retrieval: object): Record<string, unknown> {
  return {
    ...run.baseConfig,
    recipe: 'ssp',
    batchSize: 2,
    shardSize: 2,
    groupSize: 2,
    retrieval,
    sampling: { maxTokens: 128 },
    ssp: {
      maxTurns: 3,
      verifier: { temperature: 0.1, maxTokens: 8 },
      judge: { temperature: 0.1, maxTokens: 8 },
    },
    training: { policy: run.runId },
  };
}

/**
 * SCOPE's three kernels: a Challenger that searches or writes `<task> city</task>`, a Solver that searches or
 * writes `<answer> history</answer>`, and a judge that always writes
 * `<score>S</score><rubrics><rubric> city</rubric></rubrics>`: S is 1 at temperature 0 (both gates pass, one
 * rubric) and 1 or 0 at the grading temperature, so a task's ḡ varies and some tasks train the Solver.
 * Policies are told apart by their names' endings (`-c`, `-s`, anything else the judge).
 */
export function scopeModels(): (policy: string) => string {
  const challenger = agentModel(6, { task: { words: ['city'], weight: 3 } }, 1);
  const solver = agentModel(1, { answer: { words: ['history'], weight: 1 } }, 0);
  const judge = buildScriptedModel({
    tokens: ['<score>', '</score>', '<rubrics>', '</rubrics>', '<rubric>', '</rubric>'],
    chain: {
      '\n': { '<score>': 1 },
      '<score>': { '1': 11, '0': 9 },
      '1': { '</score>': 1 },
      '0': { '</score>': 1 },
      '</score>': { '<rubrics>': 1 },
      '<rubrics>': { '<rubric>': 1 },
      '<rubric>': { ' city': 1 },
      ' city': { '</rubric>': 1 },
      '</rubric>': { '</rubrics>': 1 },
      '</rubrics>': { EOS: 1 },
    },
  });
  return (policy) => (policy.endsWith('-c') ? challenger : policy.endsWith('-s') ? solver : judge);
}

/** SCOPE's policies on a kernel run: the Challenger `{runId}-c`, the Solver `{runId}-s`, the judge `{runId}-judge`. */
export const scopePolicies = (runId: string) => ({
  challenger: `${runId}-c`,
  solver: `${runId}-s`,
  judge: `${runId}-judge`,
});

/**
 * A SCOPE run config on the kernels of `scopePolicies`: each role samples from its own kernel, the two trained
 * policies train on theirs, and the judge's is a frozen endpoint. Small decodes and one to five rubrics.
 */
export function scopeKernelConfig(
  run: KernelRun,
  fields: { corpus: string; retrieval: object; scope: object },
): Record<string, unknown> {
  const { challenger, solver, judge } = scopePolicies(run.runId);
  const endpoint = (policy: string) => ({
    baseUrl: `${run.kernels[policy]!.url}/v1`,
    model: policy,
    apiKeyEnv: 'SELFPLAY_KERNEL_TOKEN',
  });
  const base = run.baseConfig as { inference: Record<string, unknown> };
  return {
    ...base,
    recipe: 'scope',
    batchSize: 2,
    shardSize: 2,
    groupSize: 2,
    corpus: { uri: fields.corpus },
    retrieval: fields.retrieval,
    sampling: { maxTokens: 128 },
    scope: {
      solverMaxSearches: 2,
      rubrics: { min: 1, max: 5 },
      judgeSampling: {
        gate: { temperature: 0, maxTokens: 16 },
        rubrics: { temperature: 0, maxTokens: 16 },
        grade: { temperature: 0.6, maxTokens: 16 },
      },
      ...fields.scope,
    },
    inference: {
      ...base.inference,
      roles: {
        challenger: endpoint(challenger),
        solver: endpoint(solver),
        judge: { ...endpoint(judge), frozen: true },
      },
    },
    training: {
      policies: {
        [challenger]: { roles: ['challenger'], trainerUrl: run.kernels[challenger]!.url },
        [solver]: { roles: ['solver'], trainerUrl: run.kernels[solver]!.url },
      },
    },
  };
}

/**
 * BM25 indexes built in a temporary directory for one test file; `retrieval` gives the run-config section
 * for a corpus. Searches return one short passage, so a trajectory has room for several turns in 128 tokens.
 */
export function searchIndexes(): {
  retrieval: (corpus: string, name: string) => Promise<Record<string, unknown>>;
  remove: () => Promise<void>;
} {
  let root: Promise<string> | undefined;
  return {
    retrieval: async (corpus, name) => {
      root ??= mkdtemp(path.join(tmpdir(), 'kernel-search-index-'));
      const out = path.join(await root, name);
      await buildIndex({ corpus, out, kind: 'bm25' });
      return { index: out, topK: 1, passageTokens: 16 };
    },
    remove: async () => {
      if (root) await rm(await root, { recursive: true, force: true });
    },
  };
}
