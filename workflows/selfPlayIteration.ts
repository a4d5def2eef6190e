import {
  versionsOf,
  type BaseCommit,
  type BatchRef,
  type FilterResult,
  type PolicyCommit,
  type PolicySet,
  type IterationInput,
  type IterationStageInput,
  type IterationResult,
  type PlanResult,
  type PlanRound,
  type ShardStageResult,
  type UpdateResult,
  type WeightSnapshot,
} from '../contracts/selfplay';
import {
  condition,
  getExternalWorkflowHandle,
  patched,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { evaluatesAfter } from '../config/evaluation';
import { evaluatedPolicy } from '../config/policies';
import { poolActivities } from './activity-options';
import type { EvalResult } from '../contracts/evaluation';
import {
  CONTROL_DESCRIPTIONS,
  baseCommittedSignal,
  iterationIssuedSignal,
  iterationPausedSignal,
  iterationSampledSignal,
  iterationProgressQuery,
} from './messages';
import { StageTimer } from './stage-timer';
import { upgradeIterationInput, type RecordedIterationInput } from '../contracts/input-upgrade';
import {
  artifactKeys,
  iterationMetrics,
  iterationSummary,
  pipelineMetrics,
  type IterationEvaluations,
} from './iteration-summary';

/**
 * Streaming (`pipeline.streaming`): the iteration tells the parent once its first round's requests are all
 * sent. Only runs configured to stream send it; the marker keeps any recorded before replaying as they ran.
 */
const STREAMING_ANNOUNCES_ISSUED = 'streaming-announces-issued';
/**
 * Streaming announces once its first round is planned, not once every shard has passed its gate: requests
 * wait for the client's completions by iteration (activities/stages/deps.ts), so the next iteration's
 * requests fill only what this one leaves free, and waiting for the gates left the slots idle through every
 * proposal tail.
 */
const STREAMING_ANNOUNCES_AT_PLAN = 'streaming-announces-at-plan';
/** The first step waits for the start evaluation (below); iterations recorded before did not. */
const START_EVALUATION_BEFORE_STEP = 'start-evaluation-before-step';

/**
 * One self-play iteration: propose → gate → solve ×G → judge → filter → update → commit.
 * The first four stages flow per shard, so a shard's tasks go on to solve as soon as its gate passes and
 * inference never waits for the slowest shard; only filter and update wait for every shard. Every activity
 * reads and writes storage by key, so a retried or replayed iteration redoes nothing that was finished.
 * A recipe that accumulates (`PlanResult.accumulation`) plans further rounds while its judged rounds fall
 * short of its target; the filter sees every round's shards. The parent forwards pause/resume by signal; a
 * paused iteration starts no new stage (stages already running finish) until resumed.
 * With `pipeline.maxStaleness` ≥ 1 the iteration tells the parent when its rollouts are done, so the next
 * one can start sampling while this one trains; an iteration started that way (`input.overlaps`) leaves the
 * trainer alone until the parent sends the previous iteration's commit, then filters and trains from it.
 * With `pipeline.streaming` it also tells the parent once its first round is planned, so the next one starts
 * sampling beside it, its requests taking only the completions this one leaves free (they wait by iteration).
 * Its input may be one an older version recorded: it is upgraded first (contracts/input-upgrade.ts).
 */
export async function selfPlayIteration(recorded: RecordedIterationInput): Promise<IterationResult> {
  const input = upgradeIterationInput(recorded);
  const it = new Iteration(input);
  const started = Date.now();
  const prepared = await it.prepareSampling();
  const evalAtStart = input.evaluateStart ? it.evaluate('evalStart', prepared) : undefined;
  // Its failure fails the iteration where it is awaited, not as an unhandled rejection before that.
  void evalAtStart?.catch(() => undefined);
  const rollouts = await it.sampleRollouts(prepared);
  const trainFrom = await it.awaitBase(prepared);
  const filtered = await it.filter(trainFrom, rollouts);
  // The start evaluation must score the version the run starts from, but a kernel sampler of a synchronous
  // run serves its trainer's live weights (only a one-step-off run pins a copy), so a step taken while the
  // evaluation still samples would answer its last items from the next version. The step waits for it: a
  // fence in the workflow holds for every engine, where pinning evaluation requests to a version would need
  // each engine to honour it. It costs this one step the time the evaluation outlasts the rollouts and the
  // filter, once per run. Histories from before the fence replay without it.
  if (evalAtStart && patched(START_EVALUATION_BEFORE_STEP)) await evalAtStart;
  const updates = await it.train(trainFrom.commit, filtered);
  const policies: PolicySet = Object.fromEntries(updates.map((u) => [u.policy, u.committed]));
  const evaluations: IterationEvaluations = {
    ...(await it.evaluateCommit(policies)),
    ...(evalAtStart ? { startScore: await evalAtStart } : {}),
  };
  return it.commit({ prepared, rollouts, trainFrom, filtered, updates, policies, evaluations, started });
}

/** The iteration's rollouts: every round's plan and every shard's stage results. */
interface Rollouts {
  plans: PlanResult[];
  shardResults: ShardStageResult[][];
}

/** The commit an iteration trains from, and how long its rollouts waited for it (overlapping). */
interface TrainFrom {
  commit: BaseCommit;
  waitSeconds: number;
}

/** Everything the commit records. */
interface Done {
  prepared: PolicySet;
  rollouts: Rollouts;
  trainFrom: TrainFrom;
  filtered: FilterResult;
  updates: UpdateResult[];
  policies: PolicySet;
  evaluations: IterationEvaluations;
  started: number;
}

/** One iteration's stages as named phases; `selfPlayIteration` runs them in order. */
class Iteration {
  private readonly pools;
  private readonly timer = new StageTimer();
  private readonly names: string[];
  private readonly versions: Record<string, number>;
  private readonly maxStaleness: number;
  private readonly parent = workflowInfo().parent;
  private base: BaseCommit | undefined;
  private sampling: { snapshots?: WeightSnapshot[] } = {};

  constructor(private readonly input: IterationInput) {
    this.pools = poolActivities(input.config);
    setHandler(iterationPausedSignal, (paused) => {
      this.timer.paused = paused;
    });
    setHandler(iterationProgressQuery, () => this.timer.progress(input.iteration), {
      description: CONTROL_DESCRIPTIONS.iterationProgress,
    });
    setHandler(baseCommittedSignal, (commit) => {
      this.base = commit;
    });
    this.names = Object.keys(input.policies).sort();
    this.versions = versionsOf(input.policies);
    this.maxStaleness = input.config.pipeline.maxStaleness;
  }

  /**
   * Sampling starts only once every policy's trainer holds its committed version and every inference server
   * serves it, verified; after a crash or preemption this is where both are brought back. The snapshot
   * published here (the base weights at version 0) is the policy's until a step replaces it. An overlapping
   * iteration samples with snapshots published already: the trainer is the previous one's.
   */
  async prepareSampling(): Promise<PolicySet> {
    const { input } = this;
    const prepared = input.overlaps ? input.policies : await this.prepare(input.policies, true);
    const snapshots = this.names.flatMap((policy) => prepared[policy]?.snapshot ?? []);
    this.sampling = snapshots.length > 0 ? { snapshots } : {};
    return prepared;
  }

  /** Brings each policy's trainer to `from` (and, syncing, every inference server to its snapshot). */
  private prepare(from: PolicySet, sync: boolean): Promise<PolicySet> {
    const { runId, config } = this.input;
    return Promise.all(
      this.names.map((policy) =>
        this.timer.time(sync ? 'sync' : 'update', async (): Promise<[string, PolicyCommit]> => {
          const committed = from[policy] as PolicyCommit;
          const snapshot = await this.pools.trainer.prepareTrainer({ runId, config, policy, committed });
          if (!snapshot) return [policy, committed];
          if (sync) await this.pools.rollout.syncWeights({ config, snapshot });
          return [policy, { ...committed, snapshot }];
        }),
      ),
    ).then((entries) => Object.fromEntries(entries));
  }

  /**
   * Held-out evaluation (config `evaluation`): of the version the run starts from, beside this iteration's
   * stages up to its step, and of the new commit before it is committed, so the manifest holds the accuracy.
   */
  evaluate(stage: 'eval' | 'evalStart', at: PolicySet): Promise<EvalResult> {
    const { runId, config } = this.input;
    const policy = evaluatedPolicy(config);
    return this.timer.time(stage, () =>
      this.pools.rollout.evaluateBenchmarks({ runId, config, policy, committed: at[policy] as PolicyCommit }),
    );
  }

  /** The new commit's evaluation, when `evaluation.every` says this iteration is evaluated. */
  async evaluateCommit(policies: PolicySet): Promise<Pick<IterationEvaluations, 'evaluated'>> {
    const { config, iteration } = this.input;
    if (!evaluatesAfter(config.evaluation, iteration, config.iterations)) return {};
    return { evaluated: await this.evaluate('eval', policies) };
  }

  /**
   * Plans and runs the rollout rounds: the first, then, for a recipe that gathers rounds, more while its
   * judged rounds fall short of the target. Streaming, the parent hears once the first round is planned
   * (histories recorded before: once every shard of it has passed its gate).
   */
  async sampleRollouts(prepared: PolicySet): Promise<Rollouts> {
    const { config } = this.input;
    const streaming = this.maxStaleness > 0 && config.pipeline.streaming && this.parent !== undefined;
    /** Shards of the first round yet to pass their gate, while the parent is to be told when none is left. */
    const announce = streaming && patched(STREAMING_ANNOUNCES_ISSUED);
    const first = await this.planRound();
    const atPlan = announce && patched(STREAMING_ANNOUNCES_AT_PLAN);
    if (atPlan) void this.tellParent(iterationIssuedSignal, prepared);
    const plans = [first];
    const shardResults = await this.runRound(first, announce && !atPlan ? prepared : undefined);
    const gather = first.accumulation;
    const judged = (metric: string): number =>
      shardResults.flat().reduce((sum, r) => sum + (r.stage === 'judge' ? (r.metrics[metric] ?? 0) : 0), 0);
    while (gather && plans.length < gather.maxRounds && judged(gather.metric) < gather.target) {
      const earlier = plans.flatMap((p) => p.shards);
      const plan = await this.planRound({
        index: plans.length,
        firstShard: Math.max(...earlier.map((s) => s.shard)) + 1,
        firstDocIndex: earlier.reduce((sum, s) => sum + s.documents, 0),
      });
      plans.push(plan);
      shardResults.push(...(await this.runRound(plan)));
    }
    return { plans, shardResults };
  }

  /** What every stage's input names: the run's lineage, the iteration, its config and the versions sampled. */
  private get stageInput(): Pick<IterationStageInput, 'runId' | 'iteration' | 'config' | 'versions'> {
    const { runId, iteration, config } = this.input;
    return { runId, iteration, config, versions: this.versions };
  }

  private planRound(round?: PlanRound): Promise<PlanResult> {
    return this.timer.time('plan', () =>
      this.pools.planner.plan({
        ...this.stageInput,
        ...recipeState(this.input),
        ...(round ? { round } : {}),
      }),
    );
  }

  /** One round's shards, each through propose → gate → solve → judge; `announce`: tell the parent once all gated. */
  private runRound(plan: PlanResult, announce?: PolicySet): Promise<ShardStageResult[][]> {
    const { pools, timer } = this;
    timer.shards = (timer.shards ?? 0) + plan.shards.length;
    let ungated = plan.shards.length;
    return Promise.all(
      plan.shards.map(async ({ shard }) => {
        const input = { ...this.stageInput, shard, ...recipeState(this.input), ...this.sampling };
        const propose = await timer.time('propose', () => pools.rollout.propose(input));
        const gate = await timer.time('gate', () => pools.orchestrator.gate(input));
        if (announce && --ungated === 0) void this.tellParent(iterationIssuedSignal, announce);
        const solve = await timer.time('solve', () => pools.rollout.solve(input));
        const judge = await timer.time('judge', () => pools.judge.judge(input));
        return [propose, gate, solve, judge];
      }),
    );
  }

  /** Tells the parent (best effort: without it the run starts the next iteration later, as it would anyway). */
  private tellParent(signal: typeof iterationSampledSignal, policies: PolicySet): Promise<void> {
    const { parent } = this;
    return parent
      ? getExternalWorkflowHandle(parent.workflowId)
          .signal(signal, { id: workflowInfo().workflowId, policies })
          .catch(() => undefined)
      : Promise.resolve();
  }

  /**
   * Rollouts are done. Overlapping, the iteration trains from the previous iteration's commit once it comes
   * (the trainer brought to it, restored after a crash; no weight sync, the next iteration may be sampling).
   */
  async awaitBase(prepared: PolicySet): Promise<TrainFrom> {
    const { input } = this;
    if (this.maxStaleness > 0 && this.parent) await this.tellParent(iterationSampledSignal, prepared);
    const sampled = Date.now();
    if (input.overlaps) await condition(() => this.base !== undefined);
    const base = this.base;
    const commit: BaseCommit = base
      ? { ...base, policies: await this.prepare(base.policies, false) }
      : { iteration: input.iteration - 1, policies: prepared, ...recipeState(input) };
    return { commit, waitSeconds: (Date.now() - sampled) / 1000 };
  }

  /** The filter: rewards, advantages and each policy's batch from every round's shards, from the base's state. */
  filter({ commit }: TrainFrom, { plans }: Rollouts): Promise<FilterResult> {
    const shards = plans.flatMap((p) => p.shards.map((s) => s.shard));
    return this.timer.time('filter', () =>
      this.pools.orchestrator.filter({ ...this.stageInput, shards, ...recipeState(commit) }),
    );
  }

  /** Each policy trains on its own rows, on its own kernel; a policy with an empty batch keeps its weights. */
  train(from: BaseCommit, filtered: FilterResult): Promise<UpdateResult[]> {
    const { runId, iteration, config } = this.input;
    return Promise.all(
      this.names.map((policy) =>
        this.timer.time('update', () =>
          this.pools.trainer.update({
            runId,
            iteration,
            config,
            policy,
            committed: from.policies[policy] as PolicyCommit,
            batch: filtered.batches[policy] as BatchRef,
          }),
        ),
      ),
    );
  }

  /** Writes the manifest (the iteration exists from then on) and answers the run with its summary. */
  async commit(done: Done): Promise<IterationResult> {
    const { runId, iteration, config } = this.input;
    const { rollouts, trainFrom, filtered, policies, evaluations } = done;
    const stageResults = rollouts.shardResults.flat();
    const metrics = iterationMetrics({
      filtered,
      updates: done.updates,
      stages: this.timer.timings(),
      stageResults,
      rounds: rollouts.plans[0]?.accumulation ? rollouts.plans.length : undefined,
      evaluations,
      pipeline: pipelineMetrics(
        this.maxStaleness,
        done.prepared,
        trainFrom.commit.policies,
        trainFrom.waitSeconds,
      ),
    });
    const recipeStateKey = filtered.recipeStateKey ?? trainFrom.commit.recipeStateKey;
    const batchKeys = Object.values(filtered.batches).map((b) => b.key);
    const committed = await this.timer.time('commit', () =>
      this.pools.orchestrator.commit({
        runId,
        iteration,
        config,
        policies,
        ...(recipeStateKey ? { recipeStateKey } : {}),
        metrics,
        artifacts: artifactKeys(stageResults, batchKeys),
      }),
    );
    return {
      iteration,
      policies,
      manifestKey: committed.manifestKey,
      ...(committed.configHash ? { configHash: committed.configHash } : {}),
      ...(recipeStateKey ? { recipeStateKey } : {}),
      summary: iterationSummary(filtered, evaluations, (Date.now() - done.started) / 1000),
    };
  }
}

const recipeState = (from: { recipeStateKey?: string }): { recipeStateKey?: string } =>
  from.recipeStateKey ? { recipeStateKey: from.recipeStateKey } : {};
