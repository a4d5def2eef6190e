import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  setHandler,
  startChild,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { resolveRunConfig } from '../config/schema';
import { versionsOf, type IterationResult, type PolicySet, type RunCarry, type RunStart } from './contracts';
import {
  CONTROL_DESCRIPTIONS,
  iterationChildId,
  iterationPausedSignal,
  pauseUpdate,
  progressQuery,
  resumeUpdate,
  setParamsUpdate,
  stopAfterIterationUpdate,
  type RunProgress,
  type RunState,
} from './messages';
import { poolActivities } from './activity-options';
import { configForContinuation, paramProblems, paramsOf, withParams } from './run-params';
import { showDetails } from './run-details';
import { selfPlayIteration } from './selfPlayIteration';
import { ITERATION, MEAN_REWARD, RECIPE, RUN_STATE, VALID_TASK_RATE } from './search-attributes';

/** Results kept in the parent's state (and so in continue-as-new input): the most recent few only. */
const RECENT = 5;

export interface RunOutcome {
  runId: string;
  lastCommitted: number;
  /** Each trained policy's committed version. */
  versions: Record<string, number>;
  recent: IterationResult[];
  /** The run completed early because of `stopAfterIteration`. */
  stopped?: boolean;
}

/**
 * A training run: ONE plain-JSON argument (so the Web UI can start it), e.g. `{"recipe":"spice"}`.
 * Each iteration is a child workflow `{runId}/iter-{n}`; the run records each committed iteration and
 * continues-as-new every `continueAsNewEvery` iterations (or when Temporal suggests it), after its children
 * and handlers have finished. `carry` is internal: the state handed over by continue-as-new.
 * Operator controls (Updates with validators, see messages.ts): `pause`/`resume` (forwarded to the running
 * child, which holds at its next stage boundary), `stopAfterIteration` and `setParams` (from the next iteration).
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
  let config = resolved.config;
  const runId = config.runId ?? workflowInfo().workflowId;
  const progress: RunProgress = {
    runId,
    recipe: config.recipe,
    state: 'starting',
    iteration: 0,
    iterations: config.iterations,
    lastCommitted: 0,
    versions: {},
    paused: carry?.paused ?? false,
    stopRequested: false,
    iterationInFlight: false,
    params: paramsOf(config),
    recent: [],
  };
  /** The id of the running iteration child, once it has started. */
  let child: string | undefined;
  const setState = (state: RunState): void => {
    progress.state = state;
    upsertSearchAttributes([{ key: RUN_STATE, value: state }]);
    showDetails(progress);
  };
  /** The state while going on: paused and stopping show whether the operator asked for it. */
  const activeState = (): RunState =>
    progress.stopRequested ? 'stopping' : progress.paused ? 'paused' : 'running';
  /** Tells the running child, if any, to hold at (or go on from) its next stage boundary. */
  const forwardPause = async (paused: boolean): Promise<void> => {
    if (!child) return;
    // The child may have just finished: then there is nothing left to pause.
    await getExternalWorkflowHandle(child)
      .signal(iterationPausedSignal, paused)
      .catch(() => undefined);
  };
  const reject = (message: string): never => {
    throw ApplicationFailure.create({ type: 'RejectedControl', nonRetryable: true, message });
  };
  const mustBeActive = (control: string): void => {
    if (progress.state === 'completed') reject(`${control}: the run is complete`);
  };

  setHandler(progressQuery, () => progress, { description: CONTROL_DESCRIPTIONS.progress });
  setHandler(
    pauseUpdate,
    async () => {
      progress.paused = true;
      setState(activeState());
      await forwardPause(true);
      return progress;
    },
    {
      description: CONTROL_DESCRIPTIONS.pause,
      validator: () => {
        mustBeActive('pause');
        if (progress.paused) reject('pause: the run is already paused');
      },
    },
  );
  setHandler(
    resumeUpdate,
    async () => {
      progress.paused = false;
      setState(activeState());
      await forwardPause(false);
      return progress;
    },
    {
      description: CONTROL_DESCRIPTIONS.resume,
      validator: () => {
        mustBeActive('resume');
        if (!progress.paused) reject('resume: the run is not paused');
      },
    },
  );
  setHandler(
    stopAfterIterationUpdate,
    () => {
      progress.stopRequested = true;
      setState(activeState());
      return progress;
    },
    {
      description: CONTROL_DESCRIPTIONS.stopAfterIteration,
      validator: () => {
        mustBeActive('stopAfterIteration');
        if (progress.stopRequested) reject('stopAfterIteration: a stop is already requested');
      },
    },
  );
  setHandler(
    setParamsUpdate,
    (params) => {
      config = withParams(config, params);
      progress.params = paramsOf(config);
      return progress;
    },
    {
      description: CONTROL_DESCRIPTIONS.setParams,
      validator: (params) => {
        mustBeActive('setParams');
        const problems = paramProblems(config, params);
        if (problems.length) reject(`setParams rejected:\n- ${problems.join('\n- ')}`);
      },
    },
  );

  const start: RunStart =
    carry ?? (await poolActivities(config).orchestrator.loadRunStart({ runId, config }));
  const recent: IterationResult[] = carry?.recent ?? [];
  /** What the last commit says: the state each iteration starts from and continue-as-new carries on. */
  let committed = committedState(start);
  let hash = recent.at(-1)?.configHash ?? start.configHash;
  Object.assign(progress, {
    iteration: start.nextIteration - 1,
    lastCommitted: start.nextIteration - 1,
    versions: versionsOf(committed.policies),
    recent: recent.map((r) => ({ iteration: r.iteration, ...r.summary })).slice(-RECENT),
    ...(start.resumedFrom ? { resumedFrom: start.resumedFrom } : {}),
  });
  upsertSearchAttributes([
    { key: RECIPE, value: config.recipe },
    { key: ITERATION, value: start.nextIteration - 1 },
  ]);
  upsertMemo(memo(runId, hash));
  setState(activeState());

  let sinceStart = 0;
  for (let n = start.nextIteration; n <= config.iterations; n++) {
    // A paused run starts no new iteration; a stop requested meanwhile completes it at once.
    await condition(() => !progress.paused || progress.stopRequested);
    if (progress.stopRequested) break;
    progress.iteration = n;
    const id = iterationChildId(runId, n);
    const handle = await startChild(selfPlayIteration, {
      workflowId: id,
      taskQueue: config.pools.orchestrator,
      args: [{ v: 2, runId, iteration: n, config, ...committed }],
    });
    child = id;
    progress.iterationInFlight = true;
    // A pause accepted while the child was starting could not reach it yet.
    if (progress.paused) await forwardPause(true);
    const result = await handle.result();
    child = undefined;
    progress.iterationInFlight = false;
    committed = committedState(result);
    hash = result.configHash ?? hash;
    recent.push(result);
    if (recent.length > RECENT) recent.shift();
    recordCommitted(progress, result);
    upsertMemo(memo(runId, hash));
    showDetails(progress);
    sinceStart++;

    if (progress.stopRequested) break;
    const more = n < config.iterations;
    if (more && (sinceStart >= config.continueAsNewEvery || workflowInfo().continueAsNewSuggested)) {
      await condition(allHandlersFinished);
      const next: RunCarry = { nextIteration: n + 1, recent, ...committed };
      if (start.resumedFrom) next.resumedFrom = start.resumedFrom;
      if (hash) next.configHash = hash;
      if (progress.paused) next.paused = true;
      return continueAsNew<typeof selfPlayRun>(configForContinuation(config), next);
    }
  }

  const stopped = progress.stopRequested && progress.lastCommitted < config.iterations;
  progress.iteration = progress.lastCommitted;
  setState('completed');
  await condition(allHandlersFinished);
  return {
    runId,
    lastCommitted: progress.lastCommitted,
    versions: versionsOf(committed.policies),
    recent,
    ...(stopped ? { stopped } : {}),
  };
}

const memo = (runId: string, configHash: string | undefined): Record<string, unknown> => ({
  storagePrefix: `runs/${runId}`,
  ...(configHash ? { configHash } : {}),
});

interface Committed {
  policies: PolicySet;
  recipeStateKey?: string;
}

/** The committed state of a run start, a carry or an iteration result, without undefined fields. */
function committedState(from: Committed): Committed {
  const { policies, recipeStateKey } = from;
  return { policies, ...(recipeStateKey ? { recipeStateKey } : {}) };
}

function recordCommitted(progress: RunProgress, result: IterationResult): void {
  progress.lastCommitted = result.iteration;
  progress.versions = versionsOf(result.policies);
  progress.recent = [...progress.recent, { iteration: result.iteration, ...result.summary }].slice(-RECENT);
  upsertSearchAttributes([
    { key: ITERATION, value: result.iteration },
    { key: MEAN_REWARD, value: result.summary.meanReward },
    { key: VALID_TASK_RATE, value: result.summary.validTaskRate },
  ]);
}
