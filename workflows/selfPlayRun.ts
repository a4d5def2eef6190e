import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  executeChild,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { RECIPES, resolveRunConfig, type RunConfig } from '../config/schema';
import type { IterationResult, PolicyRefs, RunCarry, RunStart } from './contracts';
import { progressQuery, type RunProgress } from './messages';
import { poolActivities } from './activity-options';
import { selfPlayIteration } from './selfPlayIteration';
import { ITERATION, MEAN_REWARD, RECIPE, RUN_STATE, VALID_TASK_RATE } from './search-attributes';

/** Results kept in the parent's state (and so in continue-as-new input): the most recent few only. */
const RECENT = 5;

export interface RunOutcome {
  runId: string;
  lastCommitted: number;
  policyVersion: number;
  recent: IterationResult[];
}

/**
 * A training run: ONE plain-JSON argument (so the Web UI can start it), e.g. `{"recipe":"spice"}`.
 * Each iteration is a child workflow `{runId}/iter-{n}`; the run records each committed iteration and
 * continues-as-new every `continueAsNewEvery` iterations (or when Temporal suggests it), after its children
 * and handlers have finished. `carry` is internal: the state handed over by continue-as-new.
 */
export async function selfPlayRun(input: unknown, carry?: RunCarry): Promise<RunOutcome> {
  const resolved = resolveRunConfig(input);
  if (!resolved.ok) {
    throw ApplicationFailure.create({
      type: 'InvalidConfig',
      nonRetryable: true,
      message: `invalid run config:\n- ${resolved.problems.join('\n- ')}`,
      details: [resolved.problems],
    });
  }
  const config = resolved.config;
  const runId = config.runId ?? workflowInfo().workflowId;
  const progress: RunProgress = {
    runId,
    recipe: config.recipe,
    state: 'starting',
    iteration: 0,
    iterations: config.iterations,
    lastCommitted: 0,
    policyVersion: 0,
    recent: [],
  };
  setHandler(progressQuery, () => progress);

  const start: RunStart =
    carry ?? (await poolActivities(config).orchestrator.loadRunStart({ runId, config }));
  const recent: IterationResult[] = carry?.recent ?? [];
  /** What the last commit says: the state each iteration starts from and continue-as-new carries on. */
  let committed = committedState(start);
  Object.assign(progress, {
    state: 'running',
    iteration: start.nextIteration,
    lastCommitted: start.nextIteration - 1,
    policyVersion: committed.policyVersion,
    ...(start.resumedFrom ? { resumedFrom: start.resumedFrom } : {}),
  });
  upsertSearchAttributes([
    { key: RECIPE, value: config.recipe },
    { key: RUN_STATE, value: 'running' },
    { key: ITERATION, value: start.nextIteration - 1 },
  ]);

  let sinceStart = 0;
  for (let n = start.nextIteration; n <= config.iterations; n++) {
    progress.iteration = n;
    const result = await executeChild(selfPlayIteration, {
      workflowId: `${runId}/iter-${String(n).padStart(6, '0')}`,
      taskQueue: config.pools.orchestrator,
      args: [{ v: 1, runId, iteration: n, config, ...committed }],
    });
    committed = committedState(result);
    recent.push(result);
    if (recent.length > RECENT) recent.shift();
    recordCommitted(progress, result);
    sinceStart++;

    const more = n < config.iterations;
    if (more && (sinceStart >= config.continueAsNewEvery || workflowInfo().continueAsNewSuggested)) {
      await condition(allHandlersFinished);
      const next: RunCarry = { nextIteration: n + 1, recent, ...committed };
      if (start.resumedFrom) next.resumedFrom = start.resumedFrom;
      return continueAsNew<typeof selfPlayRun>(configForContinuation(config), next);
    }
  }

  progress.state = 'completed';
  upsertSearchAttributes([{ key: RUN_STATE, value: 'completed' }]);
  await condition(allHandlersFinished);
  return { runId, lastCommitted: progress.lastCommitted, policyVersion: committed.policyVersion, recent };
}

type Committed = PolicyRefs & { policyVersion: number; recipeStateKey?: string };

/** The committed state of a run start, a carry or an iteration result, without undefined fields. */
function committedState(from: Committed): Committed {
  const { policyVersion, recipeStateKey, checkpointUri, snapshot } = from;
  return {
    policyVersion,
    ...(recipeStateKey ? { recipeStateKey } : {}),
    ...(checkpointUri ? { checkpointUri } : {}),
    ...(snapshot ? { snapshot } : {}),
  };
}

function recordCommitted(progress: RunProgress, result: IterationResult): void {
  progress.lastCommitted = result.iteration;
  progress.policyVersion = result.policyVersion;
  progress.recent = [...progress.recent, { iteration: result.iteration, ...result.summary }].slice(-RECENT);
  upsertSearchAttributes([
    { key: ITERATION, value: result.iteration },
    { key: MEAN_REWARD, value: result.summary.meanReward },
    { key: VALID_TASK_RATE, value: result.summary.validTaskRate },
  ]);
}

/**
 * The resolved config, pinned: a continued run keeps its settings even if presets change in a new release.
 * Other recipes' sections are dropped (a config may carry only its own recipe's), and `resumeFrom` too: the
 * carried state says where to go on.
 */
function configForContinuation(config: RunConfig): Record<string, unknown> {
  const { resumeFrom: _resumed, ...rest } = config;
  const pinned: Record<string, unknown> = { ...rest, runId: config.runId ?? workflowInfo().workflowId };
  for (const recipe of RECIPES) if (recipe !== config.recipe) delete pinned[recipe];
  return pinned;
}
