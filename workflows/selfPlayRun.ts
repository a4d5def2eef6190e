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
import { resolveRunConfig, runIdRuleProblem, type RunConfig } from '../config/schema';
import { temporalLimitProblem } from '../config/temporal-limits';
import type { IterationResult, RunCarry } from '../contracts/selfplay';
import {
  CONTROL_DESCRIPTIONS,
  baseCommittedSignal,
  iterationIssuedSignal,
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
  type RunParams,
  type RunProgress,
  type RunState,
} from './messages';
import { poolActivities } from './activity-options';
import { configForContinuation, paramsOf, withParams } from './run-params';
import { showDetails } from './run-details';
import { pauseChild, running, type Flight } from './pipeline';
import { selfPlayIteration } from './selfPlayIteration';
import { lineageHolding, rollbackLineage } from '../contracts/lineage';
import { RunController, type CommitColumns, type RunOutcome } from './run-controller';
import { upgradeRunCarry, type RecordedRunCarry } from '../contracts/input-upgrade';
import { ITERATION, MEAN_REWARD, RECIPE, RUN_STATE, VALID_TASK_RATE } from './search-attributes';

export type { RunOutcome } from './run-controller';

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

/**
 * A training run: ONE plain-JSON argument (so the Web UI can start it), e.g. `{"recipe":"spice"}`.
 * Each iteration is a child workflow `{runId}/iter-{n}`; the run records each committed iteration and
 * continues-as-new every `continueAsNewEvery` iterations (or when Temporal suggests it), after its children
 * and handlers have finished. `recorded` is internal: the state handed over by continue-as-new (the carry),
 * brought to its current version first (contracts/input-upgrade.ts).
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
 * The run's state and decisions are a `RunController` (run-controller.ts); `RunWorkflow` below drives it.
 */
export async function selfPlayRun(input: unknown, recorded?: RecordedRunCarry): Promise<RunOutcome> {
  const carry = recorded && upgradeRunCarry(recorded);
  const config = checkedConfig(input, carry);
  const runId = config.runId ?? workflowInfo().workflowId;
  const run = new RunWorkflow(new RunController(config, runId, carry));
  await run.begin(carry);
  return run.drive();
}

/** The run's config, resolved, with its id and limits checked (each check behind the patch that added it). */
function checkedConfig(input: unknown, carry: RunCarry | undefined): RunConfig {
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
  const invalid = (message: string): never => {
    throw ApplicationFailure.create({ type: 'InvalidConfig', nonRetryable: true, message });
  };
  const ruleProblem = runIdRuleProblem(runId);
  if (ruleProblem && patched(RUN_ID_FOLLOWS_THE_RULE)) invalid(ruleProblem);
  const idProblem = runIdProblem(runId, workflowInfo().workflowId);
  if (idProblem && patched(RUN_ID_IS_WORKFLOW_ID)) invalid(idProblem);
  const limitProblem = carry ? undefined : temporalLimitProblem(config);
  if (limitProblem && patched(ITERATIONS_FIT_TEMPORAL)) invalid(limitProblem);
  return config;
}

const reject = (message: string): never => {
  throw ApplicationFailure.create({ type: 'RejectedControl', nonRetryable: true, message });
};

/** Throws a validator's problem as the Update's rejection. */
const refuse = (problem: string | undefined): void => {
  if (problem) reject(problem);
};

/**
 * The run's effects: Temporal's handlers, activities, children, search attributes and timers, each driven by
 * what the `RunController` decides. Handlers are thin: validate with the controller, change it, show it.
 */
class RunWorkflow {
  private readonly orchestrator;
  private readonly tracking;
  /**
   * The tracking calls in order, each started after the one before ended; the run does not wait for them
   * except before it continues as new or completes. A call that fails is logged: the next one catches up.
   */
  private tracked: Promise<void> = Promise.resolve();

  constructor(private readonly run: RunController) {
    this.registerControls();
    ({ orchestrator: this.orchestrator, tracking: this.tracking } = poolActivities(run.config));
  }

  private get progress(): RunProgress {
    return this.run.progress;
  }

  private setState(state: RunState): void {
    this.progress.state = state;
    upsertSearchAttributes([{ key: RUN_STATE, value: state }]);
    showDetails(this.progress);
  }

  /** Sets the run's pause flag and tells the running children to hold at (or go on from) their next boundary. */
  private async setPaused(paused: boolean): Promise<RunProgress> {
    this.progress.paused = paused;
    this.setState(this.run.activeState());
    const started = running(this.run.flights).filter((f) => f.childStarted);
    await Promise.all(started.map((f) => pauseChild(f.id, paused)));
    return this.progress;
  }

  private registerControls(): void {
    const { run } = this;
    const d = CONTROL_DESCRIPTIONS;
    setHandler(progressQuery, () => this.progress, { description: d.progress });
    setHandler(pauseUpdate, () => this.setPaused(true), {
      description: d.pause,
      validator: () => refuse(run.pauseProblem()),
    });
    setHandler(resumeUpdate, () => this.setPaused(false), {
      description: d.resume,
      validator: () => refuse(run.resumeProblem()),
    });
    setHandler(stopAfterIterationUpdate, () => this.changed(() => (this.progress.stopRequested = true)), {
      description: d.stopAfterIteration,
      validator: () => refuse(run.stopProblem()),
    });
    setHandler(setParamsUpdate, (params) => this.setParams(params), {
      description: d.setParams,
      validator: (params) => refuse(run.setParamsProblem(params)),
    });
    setHandler(rollbackUpdate, (request) => this.rollBack(request.iteration), {
      description: d.rollback,
      validator: (request) => refuse(run.rollbackProblem(request)),
    });
    setHandler(retryIterationUpdate, () => this.changed(() => delete this.progress.failure), {
      description: d.retryIteration,
      validator: () => refuse(run.retryProblem()),
    });
    setHandler(forkUpdate, (request) => this.fork(request.id, request.iteration), {
      description: d.fork,
      validator: (request) => refuse(run.forkProblem(request)),
    });
  }

  /** Applies a control's change to the progress, then shows the state it leaves the run in. */
  private changed(change: () => unknown): RunProgress {
    change();
    this.setState(this.run.activeState());
    return this.progress;
  }

  private setParams(params: RunParams): RunProgress {
    this.run.config = withParams(this.run.config, params);
    this.progress.params = paramsOf(this.run.config);
    return this.progress;
  }

  /** Loads where the run starts (its last commit, a resume's, or the carry) and shows it. */
  async begin(carry: RunCarry | undefined): Promise<void> {
    const { run } = this;
    const start = carry ?? (await this.orchestrator.loadRunStart({ runId: run.runId, config: run.config }));
    run.begin(start);
    upsertSearchAttributes([
      { key: RECIPE, value: run.config.recipe },
      { key: ITERATION, value: start.nextIteration - 1 },
    ]);
    upsertMemo(run.memo());
    this.setState(run.activeState());
    setHandler(iterationSampledSignal, ({ id, policies }) => {
      const flight = run.flightOf(id);
      if (flight) flight.sampled = policies;
    });
    setHandler(iterationIssuedSignal, ({ id, policies }) => {
      const flight = run.flightOf(id);
      if (flight) flight.issued = policies;
    });
  }

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
  private async rollBack(k: number): Promise<RunProgress> {
    const { run } = this;
    run.rollingBack = true;
    this.setState(run.activeState());
    try {
      if (run.retaining) await condition(() => !run.retaining);
      const next = rollbackLineage(run.runId, run.lineages, k);
      const from = await this.orchestrator
        .lineageStart({ from: next.from, config: run.config })
        .catch((err: unknown) => reject(`rollback: ${failureMessage(err)}`));
      for (const f of run.flights.values()) f.scope.cancel();
      await condition(() => running(run.flights).length === 0);
      run.flights.clear();
      await this.orchestrator.saveLineages({ runId: run.runId, lineages: [...run.lineages, next] });
      upsertSearchAttributes(commitColumns(run.rolledBack(k, next, from)));
      upsertMemo(run.memo());
    } finally {
      run.rollingBack = false;
      this.setState(run.activeState());
    }
    return this.progress;
  }

  /**
   * Starts a new run from kept iteration k (the validator has checked it) with this run's config as it is
   * now. The new run's start is checked first by the same activity that starts every run (the id must have no
   * commits, k's manifest must be readable), so a fork that cannot run is refused with nothing started. The
   * new run is a child that outlives this one (ParentClosePolicy ABANDON): it is an independent run.
   */
  private async fork(id: string, k: number): Promise<ForkResult> {
    const { run } = this;
    const resumeFrom = { runId: lineageHolding(run.lineages, k) as string, iteration: k };
    const input = { ...configForContinuation(run.config), runId: id, resumeFrom };
    const resolvedFork = resolveRunConfig(input);
    if (!resolvedFork.ok) return reject(`fork: ${resolvedFork.problems.join('; ')}`);
    run.forking++;
    try {
      if (run.retaining) await condition(() => !run.retaining);
      // Records the fork in this run's storage (so retention keeps k) and checks k's weights are there.
      await this.orchestrator
        .loadRunStart({ runId: id, config: resolvedFork.config })
        .catch((err: unknown) => reject(`fork: ${failureMessage(err)}`));
    } finally {
      run.forking--;
    }
    await startChild(selfPlayRun, {
      workflowId: id,
      taskQueue: run.config.pools.orchestrator,
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
  }

  /**
   * `training.retention` after a commit: deletes the weights no kept commit names (activities/stages/
   * retention.ts). It waits for a rollback or a fork being started to finish, and they wait for it, so neither
   * reads a commit's weights while a pass deletes them. A pass that fails is logged, not fatal: deleting is
   * idempotent, and the next commit's pass deletes what this one left.
   */
  private async retain(): Promise<void> {
    const { run } = this;
    await condition(() => !run.rollingBack && run.forking === 0);
    run.retaining = true;
    try {
      await this.orchestrator.applyRetention({
        lineages: run.lineages,
        head: this.progress.lastCommitted,
        retention: run.config.training.retention,
        maxStaleness: run.config.pipeline.maxStaleness,
      });
    } catch (err) {
      if (isCancellation(err)) throw err;
      log.warn(`retention after iteration ${this.progress.lastCommitted} failed: ${failureMessage(err)}`);
    } finally {
      run.retaining = false;
    }
  }

  /** Logs commits up to `iteration` to the trackers, after the calls before it (see `tracked`). */
  private track(iteration: number): void {
    const { runId, lineages, config } = this.run;
    const request = { runId, lineages, config, iteration };
    this.tracked = this.tracked
      .then(() => this.tracking.trackCommits(request))
      .then(
        () => undefined,
        (err: unknown) => {
          if (isCancellation(err)) throw err;
          log.warn(`tracking after iteration ${iteration} failed: ${failureMessage(err)}`);
        },
      );
  }

  /**
   * Holds the run after iteration n failed until the operator acts: `retryIteration` (the loop runs n again),
   * a rollback (the loop goes on from its iteration) or a stop (the run completes at its last commit).
   */
  private async awaitOperator(n: number, err: unknown): Promise<void> {
    const { progress, run } = this;
    progress.failure = failureOf(n, err);
    this.setState(run.activeState());
    await condition(() => !progress.failure || run.rollingBack || progress.stopRequested);
    delete progress.failure;
    this.setState(run.activeState());
  }

  /** Starts iteration n's child in a scope of its own, beside `overlaps` when given (pipeline.ts). */
  private startIteration(n: number, overlaps?: Flight): Flight {
    const { run } = this;
    const id = run.childId(n);
    const input = run.iterationInput(n, overlaps);
    const flight: Flight = { n, id, scope: new CancellationScope(), childStarted: false };
    run.addFlight(flight);
    flight.ended = flight.scope
      .run(async () => {
        const handle = await startChild(selfPlayIteration, {
          workflowId: id,
          taskQueue: run.config.pools.orchestrator,
          args: [input],
        });
        flight.childStarted = true;
        // A pause accepted while the child was starting could not reach it yet.
        if (this.progress.paused) await pauseChild(id, true);
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
      .finally(() => run.flightEnded());
    return flight;
  }

  /** Waits for `head` to end, starting later iterations beside it while the staleness bound allows. */
  private async awaitEnd(head: Flight): Promise<void> {
    for (;;) {
      let from: Flight | undefined;
      await condition(
        () =>
          head.outcome !== undefined ||
          (from = this.run.overlapFrom(workflowInfo().continueAsNewSuggested)) !== undefined,
      );
      if (head.outcome) return;
      if (from) this.startIteration(from.n + 1, from);
    }
  }

  /**
   * Runs iteration n to its end: its result when it committed (and no rollback abandoned it), undefined when
   * it failed and the operator acted, or a rollback discarded it.
   */
  private async runIteration(n: number): Promise<IterationResult | undefined> {
    const { run } = this;
    const flight = run.flights.get(n) ?? this.startIteration(n);
    await this.awaitEnd(flight);
    await flight.ended;
    run.flights.delete(n);
    let result: IterationResult | undefined;
    let failed: { err: unknown } | undefined;
    if (flight.outcome && 'err' in flight.outcome) {
      const { err } = flight.outcome;
      if (!(run.rollingBack && isCancellation(err))) {
        if (isCancellation(err) || !patched(FAILED_ITERATION_WAITS)) throw err;
        failed = { err };
      }
    } else result = flight.outcome?.result;
    if (failed) await this.awaitOperator(n, failed.err);
    // A rollback accepted while the iteration ran abandons it, even when it committed meanwhile.
    return !result || run.rollingBack ? undefined : result;
  }

  /** Records iteration n's commit, sends the iteration started beside it its base, then tracks and retains. */
  private async afterCommit(n: number, result: IterationResult): Promise<void> {
    const { run } = this;
    upsertSearchAttributes(commitColumns(run.recordCommit(result)));
    upsertMemo(run.memo());
    showDetails(this.progress);
    // The next iteration, started beside this one, trains from this commit.
    const overlapped = run.flights.get(n + 1);
    if (overlapped?.childStarted && !overlapped.outcome) {
      await getExternalWorkflowHandle(overlapped.id)
        .signal(baseCommittedSignal, { iteration: n, ...run.committed })
        .catch(() => undefined);
    }
    if (run.config.tracking && patched(TRACKING_AFTER_COMMIT)) this.track(n);
    if (patched(RETENTION_AFTER_COMMIT)) await this.retain();
  }

  /** The iterations, one commit after another, until the last, a stop, or continue-as-new. */
  async drive(): Promise<RunOutcome> {
    const { run, progress } = this;
    for (;;) {
      // A paused run starts no new iteration; a stop requested meanwhile completes it at once.
      await condition(() => !run.rollingBack && (!progress.paused || progress.stopRequested));
      const n = progress.lastCommitted + 1;
      if (progress.stopRequested || n > run.config.iterations) break;
      progress.iteration = n;
      const result = await this.runIteration(n);
      if (!result) continue;
      await this.afterCommit(n, result);
      if (progress.stopRequested) break;
      if (run.continuesAsNew(n, workflowInfo().continueAsNewSuggested)) {
        await this.tracked;
        await condition(allHandlersFinished);
        return continueAsNew<typeof selfPlayRun>(configForContinuation(run.config), run.carryOn());
      }
    }
    return this.finish();
  }

  /** Completes the run: a stop discards the iterations started beside the last commit (their units stay). */
  private async finish(): Promise<RunOutcome> {
    const { run } = this;
    if (run.flights.size > 0) {
      for (const f of run.flights.values()) f.scope.cancel();
      await condition(() => running(run.flights).length === 0);
    }
    await this.tracked;
    const stopped = run.stoppedEarly();
    this.progress.iteration = this.progress.lastCommitted;
    this.setState('completed');
    await condition(allHandlersFinished);
    return run.outcome(stopped);
  }
}

/** The run's search-attribute columns for a commit (or the commit a rollback returns to). */
const commitColumns = ({ iteration, summary }: CommitColumns) => [
  { key: ITERATION, value: iteration },
  ...(summary
    ? [
        { key: MEAN_REWARD, value: summary.meanReward },
        { key: VALID_TASK_RATE, value: summary.validTaskRate },
      ]
    : []),
];

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
