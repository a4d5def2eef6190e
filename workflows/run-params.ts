import { ApplicationFailure, workflowInfo } from '@temporalio/workflow';
import { RECIPES, resolveRunConfig, type RunConfig } from '../config/schema';
import { temporalLimitProblem } from '../config/temporal-limits';
import { RUN_PARAM_KEYS, type RunParams } from './messages';

/** The parameters an operator may change while a run goes on (`setParams`), and the config they make. */
export function paramsOf(config: RunConfig): Required<RunParams> {
  return {
    learningRate: config.training.optimizer.learningRate,
    temperature: config.sampling.temperature,
    groupSize: config.groupSize,
    batchSize: config.batchSize,
  };
}

/**
 * What is wrong with `setParams` input: unknown or missing fields, the config schema's own problems, or a
 * `batchSize` whose rounds would outgrow Temporal's limits (config/temporal-limits.ts). This is the Update's
 * validator, which replay does not run, so the limits may be checked here.
 */
export function paramProblems(config: RunConfig, params: unknown): string[] {
  if (typeof params !== 'object' || params === null || Array.isArray(params))
    return ['expected an object such as {"learningRate":1e-6}'];
  const allowed: readonly string[] = RUN_PARAM_KEYS;
  const keys = Object.keys(params);
  const unknown = keys.filter((k) => !allowed.includes(k));
  if (unknown.length)
    return unknown.map((k) => `${k}: not a settable parameter (settable: ${allowed.join(', ')})`);
  if (keys.length === 0) return [`no parameter given (settable: ${allowed.join(', ')})`];
  const resolved = resolveRunConfig(merged(config, params));
  if (!resolved.ok) return resolved.problems;
  const limit = 'batchSize' in params ? temporalLimitProblem(resolved.config) : undefined;
  return limit ? [limit] : [];
}

/** The config with `params` applied, validated by the config schema (the validator has checked it). */
export function withParams(config: RunConfig, params: RunParams): RunConfig {
  const resolved = resolveRunConfig(merged(config, params));
  if (!resolved.ok) throw ApplicationFailure.nonRetryable(resolved.problems.join('; '), 'RejectedControl');
  return { ...resolved.config, ...(config.resumeFrom ? { resumeFrom: config.resumeFrom } : {}) };
}

function merged(config: RunConfig, params: RunParams): Record<string, unknown> {
  const pinned = configForContinuation(config);
  const { learningRate, temperature, groupSize, batchSize } = params;
  return {
    ...pinned,
    ...(groupSize !== undefined ? { groupSize } : {}),
    ...(batchSize !== undefined ? { batchSize } : {}),
    sampling: { ...config.sampling, ...(temperature !== undefined ? { temperature } : {}) },
    training: {
      ...config.training,
      optimizer: {
        ...config.training.optimizer,
        ...(learningRate !== undefined ? { learningRate } : {}),
      },
    },
  };
}

/**
 * The resolved config, pinned: a continued run keeps its settings even if presets change in a new release.
 * Other recipes' sections are dropped (a config may carry only its own recipe's), and `resumeFrom` too: the
 * carried state says where to go on.
 */
export function configForContinuation(config: RunConfig): Record<string, unknown> {
  const { resumeFrom: _resumed, ...rest } = withoutOtherRecipes(config);
  return { ...rest, runId: config.runId ?? workflowInfo().workflowId };
}

/**
 * The config an iteration and its activities get: the run's without the other recipes' sections, which the
 * resolved config carries with their defaults (≈ 1.8 KB of the ≈ 3.3 KB every activity input repeats in the
 * iteration's history; SPELL's rounds multiply those inputs), and without an `evaluation` section that names
 * no benchmark. Still typed as a RunConfig: only a recipe's own modules read its section
 * (activities/recipes/{recipe}/), and only the evaluation activity, never called without benchmarks, reads
 * `evaluation`, so nothing reads what is left out. It names the run (`runId`, the same in every rollback
 * lineage): model names and weight syncs tell the run's weights from another run's of the same policy name.
 */
export function iterationConfig(config: RunConfig, runId: string): RunConfig {
  const own = withoutOtherRecipes(config);
  own.runId = runId;
  if (config.evaluation.benchmarks.length === 0) delete own.evaluation;
  return own as RunConfig;
}

function withoutOtherRecipes(config: RunConfig): Partial<RunConfig> {
  const own: Partial<RunConfig> = { ...config };
  for (const recipe of RECIPES) if (recipe !== config.recipe) delete own[recipe];
  return own;
}
