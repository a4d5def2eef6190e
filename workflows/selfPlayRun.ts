import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  patched,
  setHandler,
  ParentClosePolicy,
  startChild,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { resolveRunConfig, runIdRuleProblem } from '../config/schema';
import { temporalLimitProblem } from '../config/temporal-limits';
import {
  versionsOf,
  type IterationInput,
  type IterationResult,
  type PolicySet,
  type RunCarry,
  type RunStart,
} from '../contracts/selfplay';
import {
  CONTROL_DESCRIPTIONS,
  baseCommittedSignal,
  iterationChildId,
  iterationSampledSignal,
  pauseUpdate,
  progressQuery,
  resumeUpdate,
  retryIterationUpdate,
  rollbackUpdate,
  forkUpdate,
  setParamsUpdate,
  stopAfterIterationUpdate,
  type ForkResult,
  type IterationFailure,
  type RunProgress,
  type RunState,
} from './messages';
import { poolActivities } from './activity-options';
import { configForContinuation, iterationConfig, paramProblems, paramsOf, withParams } from './run-params';
import { showDetails } from './run-details';
import { carryOf } from './run-carry';
import { nextOverlap, pauseChild, running, withSnapshots, type Flight } from './pipeline';
import { selfPlayIteration } from './selfPlayIteration';
import {
  currentLineage,
  initialLineages,
  lineagePath,
  forkProblem,
  lineageHolding,
  rollbackLineage,
  rollbackProblem,
  type Lineage,
} from '../contracts/lineage';
import { ITERATION, MEAN_REWARD, RECIPE, RUN_STATE, VALID_TASK_RATE } from './search-attributes';

/** Results kept in the parent's state (and so in continue-as-new input): the most recent few only. */
const RECENT = 5;

/**
 * A failed iteration leaves the run waiting for the operator (`needsOperator`) instead of failing it. Runs
 * recorded before this failed at that point, and replay so (`patched` is false in their histories).
 */
const FAILED_ITERATION_WAITS = 'failed-iteration-waits-for-operator';
/** `config.runId` must be the workflow id (`runIdProblem`); runs recorded before the check replay without it. */
const RUN_ID_IS_WORKFLOW_ID = 'run-id-is-workflow-id';
/**
 * The run id (the workflow id, when the config has none) must be one (`runIdRuleProblem`). Runs recorded
 * before the check, with an id no storage key takes, replay as they ran: retrying their first activity.
 */
const RUN_ID_FOLLOWS_THE_RULE = 'run-id-follows-the-rule';
/** `training.retention` runs after each commit; runs recorded before it replay without. */
const RETENTION_AFTER_COMMIT = 'retention-after-commit';
/**
 * A new run's iterations must fit Temporal's limits (`temporalLimitProblem`). Runs recorded before the check
 * replay without it, and a run continued as new goes on as it started: its rounds may never have needed it.
 */
const ITERATIONS_FIT_TEMPORAL = 'iterations-fit-temporal-limits';
/** `tracking` logs each commit to the run's experiment trackers; runs recorded before it replay without. */
const TRACKING_AFTER_COMMIT = 'tracking-after-commit';

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
 * child, which holds at its next stage boundary), `stopAfterIteration`, `setParams` (from the next iteration)
 * and `rollback` (to a committed iteration, in a new storage lineage: see lineage.ts and `rollBack` below).
 * An iteration that fails (a deterministic failure: transient ones are retried by its activities until they
 * clear) does not fail the run: the run waits in state `needsOperator` until `retryIteration` runs it again
 * (its stages reuse what they stored), a rollback, or a stop.
 * Storage, child ids and train-step keys use the current lineage's id, which is the run id until a rollback.
 * `config.runId`, when given, must be the workflow id (`runIdProblem`): a run writes only its own storage. The
 * run id, whoever chose it (the CLI, the Web UI's workflow id), must be a run id (`runIdRuleProblem`), and a
 * new run's iterations must fit Temporal's limits (config/temporal-limits.ts).
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
  const ruleProblem = runIdRuleProblem(runId);
  if (ruleProblem && patched(RUN_ID_FOLLOWS_THE_RULE)) {
    throw ApplicationFailure.create({ type: 'InvalidConfig', nonRetryable: true, message: ruleProblem });
  }
  const idProblem = runIdProblem(runId, workflowInfo().workflowId);
  if (idProblem && patched(RUN_ID_IS_WORKFLOW_ID)) {
    throw ApplicationFailure.create({ type: 'InvalidConfig', nonRetryable: true, message: idProblem });
  }
  const limitProblem = carry ? undefined : temporalLimitProblem(config);
  if (limitProblem && patched(ITERATIONS_FIT_TEMPORAL)) {
    throw ApplicationFailure.create({ type: 'InvalidConfig', nonRetryable: true, message: limitProblem });
  }
  const progress: RunProgress = {
    runId,
    recipe: config.recipe,
    state: 'starting',
    iteration: 0,
    iterations: config.iterations,
    lastCommitted: 0,
    versions: {},
    paused: carry?.paused ?? false,
    stopRequested: carry?.stopRequested ?? false,
    iterationInFlight: false,
    params: paramsOf(config),
    lineage: runId,
    recent: [],
  };
  /**
   * The iterations in flight by number: the one that commits next, and with `pipeline.maxStaleness` k ≥ 1 up
   * to k later ones started before it committed (pipeline.ts). A rollback cancels them all.
   */
  const flights = new Map<number, Flight>();
  /** A rollback is being applied: no iteration starts, no other rollback is accepted. */
  let rollingBack = false;
  /** The run's lineages (lineage.ts), known once the run has loaded where it starts (`started`). */
  let started = false;
  let lineages: Lineage[] = initialLineages(runId);
  /** The storage id the run writes under now (its `runId` in keys, child ids and train-step keys). */
  let lineage = runId;
  /**
   * Retention is deleting, or forks are being started: one waits for the other, so a rollback or fork reads
   * (and checks) the weights of its commit only when no pass is deleting (see `retain`).
   */
  let retaining = false;
  let forking = 0;
  const setState = (state: RunState): void => {
    progress.state = state;
    upsertSearchAttributes([{ key: RUN_STATE, value: state }]);
    showDetails(progress);
  };
  /** The state while going on: paused and stopping show whether the operator asked for it. */
  const activeState = (): RunState =>
    rollingBack
      ? 'rollingBack'
      : progress.failure
        ? 'needsOperator'
        : progress.stopRequested
          ? 'stopping'
          : progress.paused
            ? 'paused'
            : 'running';
  /** Tells the running children to hold at (or go on from) their next stage boundary. */
  const forwardPause = async (paused: boolean): Promise<void> => {
    const started = running(flights).filter((f) => f.childStarted);
    await Promise.all(started.map((f) => pauseChild(f.id, paused)));
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
  setHandler(rollbackUpdate, (request) => rollBack(request.iteration), {
    description: CONTROL_DESCRIPTIONS.rollback,
    validator: (request) => {
      mustBeActive('rollback');
      if (!started) reject('rollback: the run is still starting');
      if (rollingBack) reject('rollback: a rollback is already in progress');
      const problem = rollbackProblem(
        {
          lineages,
          lastCommitted: progress.lastCommitted,
          iterationInFlight: progress.iterationInFlight,
          checkpoints: config.training.checkpoint,
        },
        request,
      );
      if (problem) reject(`rollback: ${problem}`);
    },
  });

  setHandler(
    retryIterationUpdate,
    () => {
      delete progress.failure;
      setState(activeState());
      return progress;
    },
    {
      description: CONTROL_DESCRIPTIONS.retryIteration,
      validator: () => {
        mustBeActive('retryIteration');
        if (!progress.failure)
          reject(
            `retryIteration: no failed iteration is waiting to be retried; the run is ${progress.state}`,
          );
      },
    },
  );

  setHandler(forkUpdate, (request) => fork(request.id, request.iteration), {
    description: CONTROL_DESCRIPTIONS.fork,
    validator: (request) => {
      if (!started) reject('fork: the run is still starting');
      const problem = forkProblem({ runId, lineages, lastCommitted: progress.lastCommitted }, request);
      if (problem) reject(`fork: ${problem}`);
    },
  });

  const { orchestrator, tracking } = poolActivities(config);
  const start: RunStart = carry ?? (await orchestrator.loadRunStart({ runId, config }));
  const recent: IterationResult[] = carry?.recent ?? [];
  /** What the last commit says: the state each iteration starts from and continue-as-new carries on. */
  let committed = committedState(start);
  let hash = recent.at(-1)?.configHash ?? start.configHash;
  lineages = start.lineages ?? initialLineages(runId, start.resumedFrom);
  lineage = currentLineage(lineages).id;
  started = true;
  const showLineage = (): void => {
    progress.lineage = lineage;
    if (lineages.length > 1) progress.lineagePath = lineagePath(lineages);
  };
  showLineage();
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
  upsertMemo(memo(lineage, hash));
  setState(activeState());

  /**
   * Rolls back to committed iteration k (the validator has checked it): reads k's committed state from the
   * lineage holding it (before anything changes, so a failure leaves the run as it was), cancels the iteration
   * in flight and waits until it has ended (trainer activities acknowledge their cancellation, see
   * activity-options.ts), records the new lineage in storage, then goes on from k with it. Should recording
   * fail (storage down past every retry), the rollback fails and the run goes on in its lineage: the cancelled
   * iteration runs again, reusing what it had stored, as after a crash. The kernel is
   * restored by the next iteration's prepareTrainer: it holds a version other than k's (see lineage.ts in
   * activities/stages for why it cannot hold k's version with other weights).
   */
  const rollBack = async (k: number): Promise<RunProgress> => {
    rollingBack = true;
    setState(activeState());
    try {
      if (retaining) await condition(() => !retaining);
      const next = rollbackLineage(runId, lineages, k);
      const from = await orchestrator
        .lineageStart({ from: next.from, config })
        .catch((err: unknown) => reject(`rollback: ${failureMessage(err)}`));
      for (const f of flights.values()) f.scope.cancel();
      await condition(() => running(flights).length === 0);
      flights.clear();
      await orchestrator.saveLineages({ runId, lineages: [...lineages, next] });
      lineages = [...lineages, next];
      lineage = next.id;
      committed = committedState(from);
      while (recent.length && recent[recent.length - 1]!.iteration > k) recent.pop();
      Object.assign(progress, { iteration: k, lastCommitted: k, versions: versionsOf(committed.policies) });
      progress.recent = progress.recent.filter((r) => r.iteration <= k);
      showLineage();
      // The list's columns show k again (its metrics when k is among the recent iterations).
      const kept = progress.recent.at(-1);
      upsertSearchAttributes([
        { key: ITERATION, value: k },
        ...(kept?.iteration === k
          ? [
              { key: MEAN_REWARD, value: kept.meanReward },
              { key: VALID_TASK_RATE, value: kept.validTaskRate },
            ]
          : []),
      ]);
      upsertMemo(memo(lineage, hash));
    } finally {
      rollingBack = false;
      setState(activeState());
    }
    return progress;
  };

  /**
   * Starts a new run from kept iteration k (the validator has checked it) with this run's config as it is
   * now. The new run's start is checked first by the same activity that starts every run (the id must have no
   * commits, k's manifest must be readable), so a fork that cannot run is refused with nothing started. The
   * new run is a child that outlives this one (ParentClosePolicy ABANDON): it is an independent run.
   */
  const fork = async (id: string, k: number): Promise<ForkResult> => {
    const resumeFrom = { runId: lineageHolding(lineages, k) as string, iteration: k };
    const input = { ...configForContinuation(config), runId: id, resumeFrom };
    const resolvedFork = resolveRunConfig(input);
    if (!resolvedFork.ok) return reject(`fork: ${resolvedFork.problems.join('; ')}`);
    forking++;
    try {
      if (retaining) await condition(() => !retaining);
      // Records the fork in this run's storage (so retention keeps k) and checks k's weights are there.
      await orchestrator
        .loadRunStart({ runId: id, config: resolvedFork.config })
        .catch((err: unknown) => reject(`fork: ${failureMessage(err)}`));
    } finally {
      forking--;
    }
    await startChild(selfPlayRun, {
      workflowId: id,
      taskQueue: config.pools.orchestrator,
      args: [input],
      parentClosePolicy: ParentClosePolicy.ABANDON,
    }).catch((err: unknown) =>
      reject(
        err instanceof WorkflowExecutionAlreadyStartedError
          ? `fork: a workflow "${id}" already exists; choose another id`
          : `fork: ${String(err)}`,
      ),
    );
    return { workflowId: id, resumeFrom };
  };

  /**
   * `training.retention` after a commit: deletes the weights no kept commit names (activities/stages/
   * retention.ts). It waits for a rollback or a fork being started to finish, and they wait for it, so neither
   * reads a commit's weights while a pass deletes them. A pass that fails is logged, not fatal: deleting is
   * idempotent, and the next commit's pass deletes what this one left.
   */
  const retain = async (): Promise<void> => {
    await condition(() => !rollingBack && forking === 0);
    retaining = true;
    try {
      await orchestrator.applyRetention({
        lineages,
        head: progress.lastCommitted,
        retention: config.training.retention,
        maxStaleness: config.pipeline.maxStaleness,
      });
    } catch (err) {
      if (isCancellation(err)) throw err;
      log.warn(`retention after iteration ${progress.lastCommitted} failed: ${failureMessage(err)}`);
    } finally {
      retaining = false;
    }
  };

  /**
   * Holds the run after iteration n failed until the operator acts: `retryIteration` (the loop runs n again),
   * a rollback (the loop goes on from its iteration) or a stop (the run completes at its last commit).
   */
  const awaitOperator = async (n: number, err: unknown): Promise<void> => {
    progress.failure = failureOf(n, err);
    setState(activeState());
    await condition(() => !progress.failure || rollingBack || progress.stopRequested);
    delete progress.failure;
    setState(activeState());
  };

  /**
   * The tracking calls in order, each started after the one before ended; the run does not wait for them
   * except before it continues as new or completes. A call that fails is logged: the next one catches up.
   */
  let tracked: Promise<void> = Promise.resolve();
  const track = (iteration: number): void => {
    const request = { runId, lineages, config, iteration };
    tracked = tracked
      .then(() => tracking.trackCommits(request))
      .then(
        () => undefined,
        (err: unknown) => {
          if (isCancellation(err)) throw err;
          log.warn(`tracking after iteration ${iteration} failed: ${failureMessage(err)}`);
        },
      );
  };

  let sinceStart = 0;
  /** The iteration this run starts with (not a continuation's): where `evaluation.atStart` scores its start. */
  const firstIteration = carry ? undefined : start.nextIteration;
  setHandler(iterationSampledSignal, ({ id, policies }) => {
    const flight = [...flights.values()].find((f) => f.id === id);
    if (flight) flight.sampled = policies;
  });

  /**
   * Starts iteration n's child in a scope of its own. Overlapping (an earlier iteration has not committed),
   * it samples with the newest commit, with the snapshot the previous iteration sampled when that is the
   * same version (a version-0 commit names none), and trains once its base commit is sent.
   */
  const startIteration = (n: number, overlaps?: Flight): Flight => {
    const id = iterationChildId(lineage, n);
    const input: IterationInput = {
      v: 2,
      runId: lineage,
      iteration: n,
      config: iterationConfig(config, runId),
      ...committed,
      ...(overlaps?.sampled
        ? { policies: withSnapshots(committed.policies, overlaps.sampled), overlaps: true }
        : {}),
      ...(config.evaluation.atStart && n === firstIteration ? { evaluateStart: true } : {}),
    };
    const flight: Flight = { n, id, scope: new CancellationScope(), childStarted: false };
    flights.set(n, flight);
    progress.iterationInFlight = true;
    flight.ended = flight.scope
      .run(async () => {
        const handle = await startChild(selfPlayIteration, {
          workflowId: id,
          taskQueue: config.pools.orchestrator,
          args: [input],
        });
        flight.childStarted = true;
        // A pause accepted while the child was starting could not reach it yet.
        if (progress.paused) await pauseChild(id, true);
        return handle.result();
      })
      .then(
        (result) => {
          flight.outcome = { result };
        },
        (err: unknown) => {
          flight.outcome = { err };
        },
      )
      .finally(() => {
        progress.iterationInFlight = running(flights).length > 0;
      });
    return flight;
  };

  /** The newest flight, when the next iteration may start beside it (`pipeline.maxStaleness`, see pipeline.ts). */
  const overlapFrom = (): Flight | undefined =>
    rollingBack || progress.paused || progress.stopRequested || progress.failure
      ? undefined
      : nextOverlap(flights, {
          maxStaleness: config.pipeline.maxStaleness,
          lastCommitted: progress.lastCommitted,
          iterations: config.iterations,
          // Continue-as-new waits for every iteration in flight to commit: none starts past it.
          untilContinueAsNew: workflowInfo().continueAsNewSuggested
            ? 0
            : config.continueAsNewEvery - sinceStart,
        });

  /** Waits for `head` to end, starting later iterations beside it while the staleness bound allows. */
  const awaitEnd = async (head: Flight): Promise<void> => {
    for (;;) {
      let from: Flight | undefined;
      await condition(() => head.outcome !== undefined || (from = overlapFrom()) !== undefined);
      if (head.outcome) return;
      if (from) startIteration(from.n + 1, from);
    }
  };

  for (;;) {
    // A paused run starts no new iteration; a stop requested meanwhile completes it at once.
    await condition(() => !rollingBack && (!progress.paused || progress.stopRequested));
    const n = progress.lastCommitted + 1;
    if (progress.stopRequested || n > config.iterations) break;
    progress.iteration = n;
    const flight = flights.get(n) ?? startIteration(n);
    await awaitEnd(flight);
    await flight.ended;
    flights.delete(n);
    let result: IterationResult | undefined;
    let failed: { err: unknown } | undefined;
    if (flight.outcome && 'err' in flight.outcome) {
      const { err } = flight.outcome;
      if (!(rollingBack && isCancellation(err))) {
        if (isCancellation(err) || !patched(FAILED_ITERATION_WAITS)) throw err;
        failed = { err };
      }
    } else result = flight.outcome?.result;
    if (failed) await awaitOperator(n, failed.err);
    // A rollback accepted while the iteration ran abandons it, even when it committed meanwhile.
    if (!result || rollingBack) continue;
    committed = committedState(result);
    hash = result.configHash ?? hash;
    recent.push(result);
    if (recent.length > RECENT) recent.shift();
    recordCommitted(progress, result);
    upsertMemo(memo(lineage, hash));
    showDetails(progress);
    sinceStart++;
    // The next iteration, started beside this one, trains from this commit.
    const overlapped = flights.get(n + 1);
    if (overlapped?.childStarted && !overlapped.outcome) {
      await getExternalWorkflowHandle(overlapped.id)
        .signal(baseCommittedSignal, { iteration: n, ...committed })
        .catch(() => undefined);
    }
    if (config.tracking && patched(TRACKING_AFTER_COMMIT)) track(n);
    if (patched(RETENTION_AFTER_COMMIT)) await retain();

    if (progress.stopRequested) break;
    const more = n < config.iterations;
    const due = sinceStart >= config.continueAsNewEvery || workflowInfo().continueAsNewSuggested;
    if (more && flights.size === 0 && due) {
      await tracked;
      await condition(allHandlersFinished);
      const next = carryOf({
        progress,
        recent,
        committed,
        resumedFrom: start.resumedFrom,
        lineages,
        configHash: hash,
      });
      return continueAsNew<typeof selfPlayRun>(configForContinuation(config), next);
    }
  }
  // A stop discards the iterations started beside the last commit: their stored units stay for a resume.
  if (flights.size > 0) {
    for (const f of flights.values()) f.scope.cancel();
    await condition(() => running(flights).length === 0);
  }

  await tracked;
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

const memo = (lineage: string, configHash: string | undefined): Record<string, unknown> => ({
  storagePrefix: `runs/${lineage}`,
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

/**
 * `config.runId` names the storage prefix, child ids and train-step keys a run writes; another run's id there
 * would let this run overwrite that run's iterations and apply its steps under that run's keys. So it must
 * be the workflow id (what `fork`, continual jobs and `selfplay start --id` set): a run writes only its own.
 */
export function runIdProblem(runId: string, workflowId: string): string | undefined {
  if (runId === workflowId) return undefined;
  return (
    `runId: "${runId}" is not this run's workflow id "${workflowId}"; a run writes only under its own id ` +
    '(leave runId out, or start the workflow with that id; resumeFrom reads another run)'
  );
}

/** The failure a `needsOperator` run shows: the innermost cause (what the activity said), not Temporal's wrappers. */
function failureOf(iteration: number, err: unknown): IterationFailure {
  let root = err;
  while (root instanceof Error && root.cause instanceof Error) root = root.cause;
  const type = root instanceof ApplicationFailure ? (root.type ?? 'Error') : (root as Error).name;
  return { iteration, type, message: root instanceof Error ? root.message : String(root) };
}

/** An activity failure's own message (its cause), not Temporal's "Activity task failed". */
const failureMessage = (err: unknown): string =>
  err instanceof ActivityFailure && err.cause ? err.cause.message : String(err);
