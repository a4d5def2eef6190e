import { setMaxListeners } from 'node:events';
import { Context } from '@temporalio/activity';
import type { AnswerFormat, BenchmarkSpec } from '../../config/evaluation';
import { endpointFor } from '../../config/env';
import type { RunConfig } from '../../config/schema';
import { digestsOf, type WeightSnapshot } from '../../contracts/selfplay';
import type { BenchmarkResult, EvalResult, EvaluateCheckpointInput } from '../../contracts/evaluation';
import type { InferenceEndpoint } from '../clients/inference';
import type { ChatMessage } from '../clients/trainer-contract';
import { EVAL_CALLS } from '../clients/llm-protocol';
import type { AnswerKind } from '../scoring/verifiers';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import { heartbeatWhile } from '../lib/heartbeat';
import { seedOf } from '../lib/rng';
import type { ActivityDeps } from '../stages/deps';
import { runStoredUnits } from '../stages/shard-units';
import { ensureServersAt } from '../stages/sync';
import { loadBenchmark, selectItems, type Benchmark, type BenchmarkItem } from './benchmarks';
import { recordEvalMetrics } from './eval-metrics';
import { evalFolder, evalItemKey, evalItemsPrefix, evalResultsKey, selectionName } from './keys';
import { evalMessages } from './prompt';
import { sharedAnswerChecker } from '../scoring/answer-checker-pool';
import { benchmarkScore, judgeSample, type SampleVerdict } from './scoring';
import { requireInput } from '../../config/run-access';
import { recipeFor } from '../stages/deps';
import { retrieverFor } from '../retrieval/retriever';
import type { SolverSearch } from '../tools/types';
import { searchesPerAnswer, searchSamples, type SearchSample, type SearchSettings } from './search-answers';

/**
 * The role whose endpoint answers held-out questions: `inference.roles.eval` when the config sets one,
 * otherwise the default endpoint, with `{policy}` and `{version}` in its model name filled in.
 */
export const EVAL_ROLE = 'eval';

/**
 * One item's samples, as stored under `…/items/item-000017.json.gz` and in the results file; an agentic
 * evaluation's samples also keep their turns, searches and how they stopped (search-answers.ts).
 */
export interface ItemVerdicts {
  /** The item's place among the file's items. */
  unit: number;
  id: string;
  kind: AnswerKind;
  gold: string;
  samples: Array<SampleVerdict & { completion: string; finishReason: string } & Partial<SearchSample>>;
}

/**
 * Held-out evaluation of one committed version on the rollout pool, next to the inference servers: brings
 * the servers to its snapshot when the run syncs weights, asks each benchmark item n times in the recipe
 * Reasoner's format (activities/evaluation/prompt.ts), judges every sample with the recipes' verifiers and
 * stores each item the moment its samples are judged, so a retried attempt samples only the missing items.
 * Returns each benchmark's accuracy, pass@k and maj@k, and feeds the worker's Prometheus gauges.
 */
export function benchmarkActivities(deps: ActivityDeps) {
  return {
    async evaluateBenchmarks(input: EvaluateCheckpointInput): Promise<EvalResult> {
      const { config, policy, committed } = input;
      const signal = Context.current().cancellationSignal;
      // Every concurrent request of the evaluation listens on the activity's one cancellation signal.
      setMaxListeners(0, signal);
      // Every file first: a bad one fails the evaluation before anything is sampled.
      config.evaluation.benchmarks.forEach((spec, i) =>
        requireInput(deps.env, spec.uri, `evaluation.benchmarks.${i}.uri`),
      );
      const benchmarks = await Promise.all(
        config.evaluation.benchmarks.map(async (spec) => ({
          spec,
          benchmark: await loadBenchmark(
            spec.uri,
            spec.format,
            `benchmark "${spec.name}" (${spec.uri})`,
            spec.columns,
          ),
        })),
      );
      await heartbeatWhile(
        () => ({ syncing: committed.version }),
        (s) => ensureServing(deps, config, committed.version, committed.snapshot, s),
      );
      const llm = deps.inference.endpoint(
        endpointFor(
          EVAL_ROLE,
          config,
          deps.env,
          { [policy]: committed.version },
          digestsOf([committed.snapshot]),
        ),
      );
      const scored = await Promise.all(
        benchmarks.map(
          async ({ spec, benchmark }) =>
            [spec.name, await evaluateOne(deps, input, spec, benchmark, llm, signal)] as const,
        ),
      );
      const result: EvalResult = {
        policy,
        version: committed.version,
        benchmarks: Object.fromEntries(scored),
      };
      recordEvalMetrics(config.recipe, result);
      return result;
    },
  };
}

/**
 * With weight sync, brings the inference servers to the evaluated version's snapshot (verified); a version
 * without one (the base weights, which no commit published) cannot be served that way.
 */
export async function ensureServing(
  deps: ActivityDeps,
  config: RunConfig,
  version: number,
  snapshot: WeightSnapshot | undefined,
  signal: AbortSignal,
): Promise<void> {
  if (config.weightSync.engine === 'none') return;
  if (!snapshot) {
    throw nonRetryable(
      NON_RETRYABLE.invalidInput,
      `version ${version} has no sampler snapshot to load with weightSync.engine "${config.weightSync.engine}"; ` +
        'evaluate it from a server that serves it, with weightSync.engine "none" and its endpoint',
    );
  }
  await ensureServersAt(deps, config, snapshot, signal);
}

/** How each item of an evaluation is answered: one completion per sample, or a search agent's rollouts. */
type Answerer = (item: BenchmarkItem, seed: number) => Promise<ItemVerdicts['samples']>;

async function evaluateOne(
  deps: ActivityDeps,
  input: EvaluateCheckpointInput,
  spec: BenchmarkSpec,
  benchmark: Benchmark,
  llm: InferenceEndpoint,
  signal: AbortSignal,
): Promise<BenchmarkResult> {
  const { config, policy, committed } = input;
  const e = config.evaluation;
  const sampling = {
    n: e.n,
    temperature: e.temperature,
    topP: e.topP,
    maxTokens: e.maxTokens ?? config.sampling.maxTokens,
  };
  const search = e.rollout === 'search';
  const folder = evalFolder({
    runId: input.runId,
    policy,
    version: committed.version,
    benchmark: spec.name,
    // The prompt around a placeholder question: what the template (or the search agent) makes of any question.
    settings: {
      uri: spec.uri,
      format: benchmark.format,
      prompt: search
        ? solverSearch(deps, config, '{question}')
        : evalMessages('{question}', e.template, config),
      ...(e.answerFormat ? { answerFormat: e.answerFormat } : {}),
      seed: e.seed,
      model: llm.settings.model,
      ...sampling,
      ...(search ? { retrieval: config.retrieval } : {}),
    },
  });
  const answer: Answerer = search
    ? await searchAnswerer(deps, config, llm, sampling, signal)
    : (item, seed) =>
        answerSamples(
          llm,
          item,
          evalMessages(item.question, e.template, config),
          seed,
          sampling,
          e.answerFormat,
          signal,
        );
  const out = await runStoredUnits({
    store: deps.store,
    key: evalResultsKey(folder, selectionName(spec.limit, spec.subsetSeed)),
    partsPrefix: evalItemsPrefix(folder),
    partKey: (unit) => evalItemKey(folder, unit),
    inputs: selectItems(benchmark.items, spec).map((item) => ({ ...item, unit: item.index })),
    work: async (item): Promise<ItemVerdicts> => ({
      unit: item.unit,
      id: item.id,
      kind: item.kind,
      gold: item.answer,
      samples: await answer(item, seedOf(e.seed, 'eval', spec.name, item.index)),
    }),
    details: (done, total) => ({ benchmark: spec.name, done, total }),
  });
  const score = benchmarkScore(
    out.records.map((r) => ({ answer: r.gold, kind: r.kind, samples: r.samples })),
  );
  return {
    format: benchmark.format,
    ...score,
    ...(search ? { searchesPerAnswer: searchesPerAnswer(out.records) } : {}),
    reusedItems: out.reusedUnits,
    resultsKey: out.key,
  };
}

type Sampling = { n: number; temperature: number; topP: number; maxTokens: number };

/** `n` completions of the prompt, each judged on its answer as `format` reads it (its last `\boxed{}` by default). */
async function answerSamples(
  llm: InferenceEndpoint,
  item: BenchmarkItem,
  messages: ChatMessage[],
  seed: number,
  sampling: Sampling,
  format: AnswerFormat | undefined,
  signal: AbortSignal,
): Promise<ItemVerdicts['samples']> {
  const samples = await llm.chat({
    role: EVAL_ROLE,
    call: EVAL_CALLS.answer,
    messages,
    seed,
    ...sampling,
    signal,
  });
  return Promise.all(
    samples.map(async (s) => ({
      ...(await judgeSample(item, s.content, sharedAnswerChecker(), format)),
      completion: s.content,
      finishReason: s.finishReason,
    })),
  );
}

/** The recipe solver's search for a question; an evaluation of a recipe without one is refused. */
function solverSearch(deps: ActivityDeps, config: RunConfig, question: string): SolverSearch {
  const recipe = recipeFor(deps, config);
  if (!recipe.solverSearch)
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `evaluation.rollout "search": recipe ${config.recipe} has no search-agent solver (SSP and SCOPE have)`,
    );
  return recipe.solverSearch(config, question);
}

/** Each item answered by the recipe solver's search rollouts, with the run's index as the tool. */
async function searchAnswerer(
  deps: ActivityDeps,
  config: RunConfig,
  llm: InferenceEndpoint,
  sampling: Sampling,
  signal: AbortSignal,
): Promise<Answerer> {
  const { n, ...loop } = sampling;
  const settings: SearchSettings = {
    llm,
    retriever: await retrieverFor(config, deps),
    check: sharedAnswerChecker(),
    role: EVAL_ROLE,
    ...loop,
    topK: config.retrieval.topK,
    passageTokens: config.retrieval.passageTokens,
    ...(config.retrieval.responseTokens ? { responseTokens: config.retrieval.responseTokens } : {}),
    signal,
  };
  return (item, seed) => searchSamples(settings, solverSearch(deps, config, item.question), item, n, seed);
}
