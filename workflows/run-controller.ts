import type { RunConfig } from '../config/schema';
import {
  ITERATION_INPUT_VERSION,
  versionsOf,
  type IterationInput,
  type IterationResult,
  type PolicySet,
  type RunCarry,
  type RunStart,
} from '../contracts/selfplay';
import {
  currentLineage,
  forkProblem,
  initialLineages,
  lineagePath,
  rollbackProblem,
  type Lineage,
} from '../contracts/lineage';
import type { RunProgress, RunState } from './messages';
import { iterationChildId } from './messages';
import { iterationConfig, paramProblems, paramsOf } from './run-params';
import { carryOf } from './run-carry';
import { behaviourOf, nextOverlap, running, withSnapshots, type Flight } from './pipeline';

/**
 * How many versions each weight-sync engine serves at once without a load under a request (streaming may
 * start an iteration beside an older one within it): vLLM keeps the previous version's adapter loaded beside
 * the new one; `none` loads nothing; SGLang and the kernel's pinned copy replace their weights.
 */
const VERSIONS_AT_ONCE: Record<RunConfig['weightSync']['engine'], number> = {
  none: Number.POSITIVE_INFINITY,
  vllm: 2,
  kernel: 1,
  sglang: 1,
};

/** Results kept in the parent's state (and so in continue-as-new input): the most recent few only. */
const RECENT = 5;

/** The committed state each iteration starts from and continue-as-new carries on. */
export interface Committed {
  policies: PolicySet;
  recipeStateKey?: string;
}

export interface RunOutcome {
  runId: string;
  lastCommitted: number;
  /** Each trained policy's committed version. */
  versions: Record<string, number>;
  recent: IterationResult[];
  /** The run completed early because of `stopAfterIteration`. */
  stopped?: boolean;
}

/** The run's search-attribute columns for a commit: its iteration and, when known, its metrics. */
export interface CommitColumns {
  iteration: number;
  summary?: { meanReward: number; validTaskRate: number };
}

/**
 * The run's state and decisions, without Temporal: what the operator's controls may do now (each validator's
 * problem, or undefined), what they change, which iteration starts next and from what, and what a commit, a
 * rollback, continue-as-new and the end make of the state. `selfPlayRun` drives it: it owns every effect
 * (activities, children, timers, search attributes) and asks this class what to do.
 */
export class RunController {
  readonly progress: RunProgress;
  /**
   * The iterations in flight by number: the one that commits next, and with `pipeline.maxStaleness` k ≥ 1 up
   * to k later ones started before it committed (pipeline.ts). A rollback cancels them all.
   */
  readonly flights = new Map<number, Flight>();
  /** A rollback is being applied: no iteration starts, no other rollback is accepted. */
  rollingBack = false;
  /** The run's lineages (lineage.ts), known once the run has loaded where it starts (`started`). */
  started = false;
  lineages: Lineage[];
  /** The storage id the run writes under now (its `runId` in keys, child ids and train-step keys). */
  lineage: string;
  /**
   * Retention is deleting, or forks are being started: one waits for the other, so a rollback or fork reads
   * (and checks) the weights of its commit only when no pass is deleting.
   */
  retaining = false;
  forking = 0;
  committed: Committed = { policies: {} };
  configHash: string | undefined;
  recent: IterationResult[];
  /** Iterations committed since this execution started (continue-as-new counts them). */
  sinceStart = 0;
  /** The iteration this run starts with (not a continuation's): where `evaluation.atStart` scores its start. */
  private firstIteration: number | undefined;
  private resumedFrom: RunStart['resumedFrom'];

  constructor(
    public config: RunConfig,
    readonly runId: string,
    private readonly carry: RunCarry | undefined,
  ) {
    this.lineages = initialLineages(runId);
    this.lineage = runId;
    this.recent = carry?.recent ?? [];
    this.progress = {
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
  }

  /** The run has loaded where it starts (its last commit, a resume's, or the carry). */
  begin(start: RunStart): void {
    this.committed = committedState(start);
    this.configHash = this.recent.at(-1)?.configHash ?? start.configHash;
    this.lineages = start.lineages ?? initialLineages(this.runId, start.resumedFrom);
    this.lineage = currentLineage(this.lineages).id;
    this.resumedFrom = start.resumedFrom;
    this.firstIteration = this.carry ? undefined : start.nextIteration;
    this.started = true;
    this.showLineage();
    Object.assign(this.progress, {
      iteration: start.nextIteration - 1,
      lastCommitted: start.nextIteration - 1,
      versions: versionsOf(this.committed.policies),
      recent: this.recent.map((r) => ({ iteration: r.iteration, ...r.summary })).slice(-RECENT),
      ...(start.resumedFrom ? { resumedFrom: start.resumedFrom } : {}),
    });
  }

  private showLineage(): void {
    this.progress.lineage = this.lineage;
    if (this.lineages.length > 1) this.progress.lineagePath = lineagePath(this.lineages);
  }

  /** The state while going on: paused and stopping show whether the operator asked for it. */
  activeState(): RunState {
    const p = this.progress;
    if (this.rollingBack) return 'rollingBack';
    if (p.failure) return 'needsOperator';
    if (p.stopRequested) return 'stopping';
    return p.paused ? 'paused' : 'running';
  }

  // The controls' validators: why the control is refused now, or undefined when it is accepted. They take
  // what the client sent, unchecked (a validator sees the raw input).

  private completed(control: string): string | undefined {
    return this.progress.state === 'completed' ? `${control}: the run is complete` : undefined;
  }

  pauseProblem(): string | undefined {
    return this.completed('pause') ?? (this.progress.paused ? 'pause: the run is already paused' : undefined);
  }

  resumeProblem(): string | undefined {
    return this.completed('resume') ?? (this.progress.paused ? undefined : 'resume: the run is not paused');
  }

  stopProblem(): string | undefined {
    const already = this.progress.stopRequested
      ? 'stopAfterIteration: a stop is already requested'
      : undefined;
    return this.completed('stopAfterIteration') ?? already;
  }

  setParamsProblem(params: unknown): string | undefined {
    const problems = paramProblems(this.config, params);
    const rejected = problems.length ? `setParams rejected:\n- ${problems.join('\n- ')}` : undefined;
    return this.completed('setParams') ?? rejected;
  }

  rollbackProblem(request: unknown): string | undefined {
    const done = this.completed('rollback');
    if (done) return done;
    if (!this.started) return 'rollback: the run is still starting';
    if (this.rollingBack) return 'rollback: a rollback is already in progress';
    const problem = rollbackProblem(
      {
        lineages: this.lineages,
        lastCommitted: this.progress.lastCommitted,
        iterationInFlight: this.progress.iterationInFlight,
        checkpoints: this.config.training.checkpoint,
      },
      request,
    );
    return problem ? `rollback: ${problem}` : undefined;
  }

  retryProblem(): string | undefined {
    const none = this.progress.failure
      ? undefined
      : `retryIteration: no failed iteration is waiting to be retried; the run is ${this.progress.state}`;
    return this.completed('retryIteration') ?? none;
  }

  forkProblem(request: unknown): string | undefined {
    if (!this.started) return 'fork: the run is still starting';
    const { runId, lineages } = this;
    const problem = forkProblem({ runId, lineages, lastCommitted: this.progress.lastCommitted }, request);
    return problem ? `fork: ${problem}` : undefined;
  }

  /**
   * Iteration n's input. Overlapping (an earlier iteration has not committed), it samples with the newest
   * commit, with the snapshot the previous iteration sampled when that is the same version (a version-0
   * commit names none), and trains once its base commit is sent.
   */
  iterationInput(n: number, overlaps?: Flight): IterationInput {
    const { config, committed } = this;
    const behaviour = overlaps && behaviourOf(overlaps);
    return {
      v: ITERATION_INPUT_VERSION,
      runId: this.lineage,
      iteration: n,
      config: iterationConfig(config, this.runId),
      ...committed,
      ...(behaviour ? { policies: withSnapshots(committed.policies, behaviour), overlaps: true } : {}),
      ...(config.evaluation.atStart && n === this.firstIteration ? { evaluateStart: true } : {}),
    };
  }

  /** A new flight of iteration n's child, in flight from now. */
  addFlight(flight: Flight): void {
    this.flights.set(flight.n, flight);
    this.progress.iterationInFlight = true;
  }

  /** A flight's child has ended. */
  flightEnded(): void {
    this.progress.iterationInFlight = running(this.flights).length > 0;
  }

  /** The flight whose child has `id`, if any is in flight. */
  flightOf(id: string): Flight | undefined {
    return [...this.flights.values()].find((f) => f.id === id);
  }

  /**
   * The newest flight, when the next iteration may start beside it (`pipeline.maxStaleness`, see
   * pipeline.ts). `continueAsNewSuggested`: Temporal's hint, read by the workflow.
   */
  overlapFrom(continueAsNewSuggested: boolean): Flight | undefined {
    const { config, progress } = this;
    if (this.rollingBack || progress.paused || progress.stopRequested || progress.failure) return undefined;
    return nextOverlap(this.flights, {
      maxStaleness: config.pipeline.maxStaleness,
      lastCommitted: progress.lastCommitted,
      iterations: config.iterations,
      // Continue-as-new waits for every iteration in flight to commit: none starts past it.
      untilContinueAsNew: continueAsNewSuggested ? 0 : config.continueAsNewEvery - this.sinceStart,
      ...(config.pipeline.streaming
        ? {
            streaming: {
              versions: versionsOf(this.committed.policies),
              versionsAtOnce: VERSIONS_AT_ONCE[config.weightSync.engine],
            },
          }
        : {}),
    });
  }

  /** Records iteration `result`'s commit: the state the next iteration starts from, progress and recent results. */
  recordCommit(result: IterationResult): CommitColumns {
    this.committed = committedState(result);
    this.configHash = result.configHash ?? this.configHash;
    this.recent.push(result);
    if (this.recent.length > RECENT) this.recent.shift();
    const p = this.progress;
    p.lastCommitted = result.iteration;
    p.versions = versionsOf(result.policies);
    p.recent = [...p.recent, { iteration: result.iteration, ...result.summary }].slice(-RECENT);
    this.sinceStart++;
    return { iteration: result.iteration, summary: result.summary };
  }

  /** The run goes on from committed iteration k in lineage `next`, from k's committed state `from`. */
  rolledBack(k: number, next: Lineage, from: Committed): CommitColumns {
    this.lineages = [...this.lineages, next];
    this.lineage = next.id;
    this.committed = committedState(from);
    while (this.recent.length && this.recent[this.recent.length - 1]!.iteration > k) this.recent.pop();
    Object.assign(this.progress, {
      iteration: k,
      lastCommitted: k,
      versions: versionsOf(this.committed.policies),
    });
    this.progress.recent = this.progress.recent.filter((r) => r.iteration <= k);
    this.showLineage();
    // The list's columns show k again (its metrics when k is among the recent iterations).
    const kept = this.progress.recent.at(-1);
    return { iteration: k, ...(kept?.iteration === k ? { summary: kept } : {}) };
  }

  /** Whether the run continues as new after iteration n's commit (nothing in flight, more to run, and due). */
  continuesAsNew(n: number, continueAsNewSuggested: boolean): boolean {
    const more = n < this.config.iterations;
    const due = this.sinceStart >= this.config.continueAsNewEvery || continueAsNewSuggested;
    return more && this.flights.size === 0 && due;
  }

  /** What continue-as-new hands over (read once the run has drained). */
  carryOn(): RunCarry {
    return carryOf({
      progress: this.progress,
      recent: this.recent,
      committed: this.committed,
      resumedFrom: this.resumedFrom,
      lineages: this.lineages,
      configHash: this.configHash,
    });
  }

  /** A stop completes the run before its last iteration. */
  stoppedEarly(): boolean {
    return this.progress.stopRequested && this.progress.lastCommitted < this.config.iterations;
  }

  /** The run's result once it is complete; `stopped`: `stoppedEarly()` when it completed. */
  outcome(stopped: boolean): RunOutcome {
    const { progress } = this;
    return {
      runId: this.runId,
      lastCommitted: progress.lastCommitted,
      versions: versionsOf(this.committed.policies),
      recent: this.recent,
      ...(stopped ? { stopped } : {}),
    };
  }

  /** The memo the Web UI shows: where the run writes, and its config's hash. */
  memo(): Record<string, unknown> {
    return {
      storagePrefix: `runs/${this.lineage}`,
      ...(this.configHash ? { configHash: this.configHash } : {}),
    };
  }

  /** The child id of iteration n in the current lineage. */
  childId(n: number): string {
    return iterationChildId(this.lineage, n);
  }
}

/** The committed state of a run start, a carry or an iteration result, without undefined fields. */
function committedState(from: Committed): Committed {
  const { policies, recipeStateKey } = from;
  return { policies, ...(recipeStateKey ? { recipeStateKey } : {}) };
}
