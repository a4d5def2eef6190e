import { setMaxListeners } from 'node:events';
import { Context } from '@temporalio/activity';
import type { BenchmarkSpec } from '../../config/evaluation';
import { endpointFor } from '../../config/env';
import type { RunConfig } from '../../config/schema';
import type { WeightSnapshot } from '../../contracts/selfplay';
import type { BenchmarkResult, EvalResult, EvaluateCheckpointInput } from '../../contracts/evaluation';
import type { InferenceEndpoint } from '../clients/inference';
import { EVAL_CALLS } from '../clients/llm-protocol';
import type { AnswerKind } from '../scoring/verifiers';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import { heartbeatWhile } from '../lib/heartbeat';
import { seedOf } from '../lib/rng';
import type { ActivityDeps } from '../stages/deps';
import { runStoredUnits } from '../stages/shard-units';
import { ensureServersAt } from '../stages/sync';
import { loadBenchmark, selectItems, type Benchmark } from './benchmarks';
import { recordEvalMetrics } from './eval-metrics';
import { evalFolder, evalItemKey, evalItemsPrefix, evalResultsKey, selectionName } from './keys';
import { evalMessages } from './prompt';
import { sharedAnswerChecker } from '../scoring/answer-checker-pool';
import { benchmarkScore, judgeSample, type SampleVerdict } from './scoring';
import { requireInput } from '../../config/run-access';

/**
 * The role whose endpoint answers held-out questions: `inference.roles.eval` when the config sets one,
 * otherwise the default endpoint, with `{policy}` and `{version}` in its model name filled in.
 */
export const EVAL_ROLE = 'eval';

/** One item's samples, as stored under `…/items/item-000017.json.gz` and in the results file. */
export interface ItemVerdicts {
  /** The item's place among the file's items. */
  unit: number;
  id: string;
  kind: AnswerKind;
  gold: string;
  samples: Array<SampleVerdict & { completion: string; finishReason: string }>;
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
        endpointFor(EVAL_ROLE, config, deps.env, { [policy]: committed.version }),
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
  const folder = evalFolder({
    runId: input.runId,
    policy,
    version: committed.version,
    benchmark: spec.name,
    // The prompt around a placeholder question: what the template makes of any question.
    settings: {
      uri: spec.uri,
      format: benchmark.format,
      prompt: evalMessages('{question}', e.template, config),
      ...(e.answerFormat ? { answerFormat: e.answerFormat } : {}),
      seed: e.seed,
      model: llm.settings.model,
      ...sampling,
    },
  });
  const out = await runStoredUnits({
    store: deps.store,
    key: evalResultsKey(folder, selectionName(spec.limit, spec.subsetSeed)),
    partsPrefix: evalItemsPrefix(folder),
    partKey: (unit) => evalItemKey(folder, unit),
    inputs: selectItems(benchmark.items, spec).map((item) => ({ ...item, unit: item.index })),
    work: async (item): Promise<ItemVerdicts> => {
      const samples = await llm.chat({
        role: EVAL_ROLE,
        call: EVAL_CALLS.answer,
        messages: evalMessages(item.question, e.template, config),
        seed: seedOf(e.seed, 'eval', spec.name, item.index),
        ...sampling,
        signal,
      });
      return {
        unit: item.unit,
        id: item.id,
        kind: item.kind,
        gold: item.answer,
        samples: await Promise.all(
          samples.map(async (s) => ({
            ...(await judgeSample(item, s.content, sharedAnswerChecker(), e.answerFormat)),
            completion: s.content,
            finishReason: s.finishReason,
          })),
        ),
      };
    },
    details: (done, total) => ({ benchmark: spec.name, done, total }),
  });
  const score = benchmarkScore(
    out.records.map((r) => ({ answer: r.gold, kind: r.kind, samples: r.samples })),
  );
  return { format: benchmark.format, ...score, reusedItems: out.reusedUnits, resultsKey: out.key };
}
