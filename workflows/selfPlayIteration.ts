import {
  versionsOf,
  type BaseCommit,
  type BatchRef,
  type PolicyCommit,
  type PolicySet,
  type IterationInput,
  type IterationMetrics,
  type IterationResult,
  type PipelineMetrics,
  type PlanResult,
  type PlanRound,
  type ShardStageResult,
  type StageName,
  type StageTiming,
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
  type IterationProgress,
  type StageCount,
} from './messages';

/**
 * Streaming (`pipeline.streaming`): the iteration tells the parent once its first round's requests are all
 * sent. Only runs configured to stream send it; the marker keeps any recorded before replaying as they ran.
 */
const STREAMING_ANNOUNCES_ISSUED = 'streaming-announces-issued';
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
 * With `pipeline.streaming` it also tells the parent once every shard of its first round has passed its gate
 * (only solving and judging remain, their requests sent), so the next one's requests queue behind its tail.
 */
export async function selfPlayIteration(input: IterationInput): Promise<IterationResult> {
  const { config, runId, iteration } = input;
  const pools = poolActivities(config);
  const timer = new StageTimer();
  setHandler(iterationPausedSignal, (paused) => {
    timer.paused = paused;
  });
  setHandler(iterationProgressQuery, () => timer.progress(iteration), {
    description: CONTROL_DESCRIPTIONS.iterationProgress,
  });
  let base: BaseCommit | undefined;
  setHandler(baseCommittedSignal, (commit) => {
    base = commit;
  });
  const started = Date.now();
  const names = Object.keys(input.policies).sort();
  const versions = versionsOf(input.policies);

  // Sampling starts only once every policy's trainer holds its committed version and every inference
  // server serves it, verified; after a crash or preemption this is where both are brought back. The
  // snapshot published here (the base weights at version 0) is the policy's until a step replaces it.
  // An overlapping iteration samples with snapshots published already: the trainer is the previous one's.
  const prepare = (from: PolicySet, sync: boolean): Promise<PolicySet> =>
    Promise.all(
      names.map((policy) =>
        timer.time(sync ? 'sync' : 'update', async (): Promise<[string, PolicyCommit]> => {
          const committed = from[policy] as PolicyCommit;
          const snapshot = await pools.trainer.prepareTrainer({ runId, config, policy, committed });
          if (!snapshot) return [policy, committed];
          if (sync) await pools.rollout.syncWeights({ config, snapshot });
          return [policy, { ...committed, snapshot }];
        }),
      ),
    ).then((entries) => Object.fromEntries(entries));
  const prepared: PolicySet = input.overlaps ? input.policies : await prepare(input.policies, true);
  const snapshots = names.flatMap((policy) => prepared[policy]?.snapshot ?? []);
  const sampling = snapshots.length > 0 ? { snapshots } : {};

  // Held-out evaluation (config `evaluation`): of the version the run starts from, beside this iteration's
  // stages up to its step, and of the new commit before it is committed, so the manifest holds the accuracy.
  const evaluate = (stage: 'eval' | 'evalStart', at: PolicySet): Promise<EvalResult> => {
    const policy = evaluatedPolicy(config);
    return timer.time(stage, () =>
      pools.rollout.evaluateBenchmarks({ runId, config, policy, committed: at[policy] as PolicyCommit }),
    );
  };
  const evalAtStart = input.evaluateStart ? evaluate('evalStart', prepared) : undefined;
  // Its failure fails the iteration where it is awaited, not as an unhandled rejection before that.
  void evalAtStart?.catch(() => undefined);

  const planRound = (round?: PlanRound): Promise<PlanResult> =>
    timer.time('plan', () =>
      pools.planner.plan({
        runId,
        iteration,
        config,
        versions,
        ...recipeState(input),
        ...(round ? { round } : {}),
      }),
    );
  const maxStaleness = config.pipeline?.maxStaleness ?? 0;
  const parent = workflowInfo().parent;
  /** Tells the parent (best effort: without it the run starts the next iteration later, as it would anyway). */
  const tellParent = (signal: typeof iterationSampledSignal): Promise<void> =>
    parent
      ? getExternalWorkflowHandle(parent.workflowId)
          .signal(signal, { id: workflowInfo().workflowId, policies: prepared })
          .catch(() => undefined)
      : Promise.resolve();
  const streaming = maxStaleness > 0 && config.pipeline?.streaming === true && parent !== undefined;
  /** Shards of the first round yet to pass their gate, while the parent is to be told when none is left. */
  let ungated = streaming && patched(STREAMING_ANNOUNCES_ISSUED) ? undefined : 0;
  const runRound = (plan: PlanResult): Promise<ShardStageResult[][]> => {
    timer.shards = (timer.shards ?? 0) + plan.shards.length;
    ungated ??= plan.shards.length;
    return Promise.all(
      plan.shards.map(async ({ shard }) => {
        const stageInput = { runId, iteration, shard, config, versions, ...recipeState(input), ...sampling };
        const propose = await timer.time('propose', () => pools.rollout.propose(stageInput));
        const gate = await timer.time('gate', () => pools.orchestrator.gate(stageInput));
        if (ungated && --ungated === 0) void tellParent(iterationIssuedSignal);
        const solve = await timer.time('solve', () => pools.rollout.solve(stageInput));
        const judge = await timer.time('judge', () => pools.judge.judge(stageInput));
        return [propose, gate, solve, judge];
      }),
    );
  };
  const first = await planRound();
  const plans = [first];
  const shardResults = await runRound(first);
  // A recipe that gathers rounds plans more units while its judged rounds fall short of the target.
  const gather = first.accumulation;
  const judged = (metric: string): number =>
    shardResults.flat().reduce((sum, r) => sum + (r.stage === 'judge' ? (r.metrics[metric] ?? 0) : 0), 0);
  while (gather && plans.length < gather.maxRounds && judged(gather.metric) < gather.target) {
    const earlier = plans.flatMap((p) => p.shards);
    const plan = await planRound({
      index: plans.length,
      firstShard: Math.max(...earlier.map((s) => s.shard)) + 1,
      firstDocIndex: earlier.reduce((sum, s) => sum + s.documents, 0),
    });
    plans.push(plan);
    shardResults.push(...(await runRound(plan)));
  }
  const shards = plans.flatMap((p) => p.shards.map((s) => s.shard));

  // Rollouts are done. Overlapping, the iteration trains from the previous iteration's commit once it comes
  // (the trainer brought to it, restored after a crash; no weight sync, the next iteration may be sampling).
  if (maxStaleness > 0 && parent) await tellParent(iterationSampledSignal);
  const sampled = Date.now();
  if (input.overlaps) await condition(() => base !== undefined);
  const trainFrom: BaseCommit = base
    ? { ...base, policies: await prepare(base.policies, false) }
    : { iteration: iteration - 1, policies: prepared, ...recipeState(input) };
  const waitSeconds = (Date.now() - sampled) / 1000;

  const filtered = await timer.time('filter', () =>
    pools.orchestrator.filter({ runId, iteration, config, versions, shards, ...recipeState(trainFrom) }),
  );
  // The start evaluation must score the version the run starts from, but a kernel sampler of a synchronous
  // run serves its trainer's live weights (only a one-step-off run pins a copy), so a step taken while the
  // evaluation still samples would answer its last items from the next version. The step waits for it: a
  // fence in the workflow holds for every engine, where pinning evaluation requests to a version would need
  // each engine to honour it. It costs this one step the time the evaluation outlasts the rollouts and the
  // filter, once per run. Histories from before the fence replay without it.
  if (evalAtStart && patched(START_EVALUATION_BEFORE_STEP)) await evalAtStart;
  // Each policy trains on its own rows, on its own kernel; a policy with an empty batch keeps its weights.
  const updates = await Promise.all(
    names.map((policy) =>
      timer.time('update', () =>
        pools.trainer.update({
          runId,
          iteration,
          config,
          policy,
          committed: trainFrom.policies[policy] as PolicyCommit,
          batch: filtered.batches[policy] as BatchRef,
        }),
      ),
    ),
  );
  const policies: PolicySet = Object.fromEntries(updates.map((u) => [u.policy, u.committed]));
  const evaluated = evaluatesAfter(config.evaluation, iteration, config.iterations)
    ? await evaluate('eval', policies)
    : undefined;
  const startScore = await evalAtStart;

  const stageResults: ShardStageResult[] = shardResults.flat();
  const metrics: IterationMetrics = {
    recipe: filtered.metrics,
    train: Object.fromEntries(updates.filter((u) => u.applied).map((u) => [u.policy, u.train])),
    stages: timer.timings(),
    reusedUnits: stageResults.reduce((sum, r) => sum + r.reusedUnits, 0),
    ...(gather ? { rounds: plans.length } : {}),
    ...(evaluated ? { eval: evaluated } : {}),
    ...(startScore ? { evalAtStart: startScore } : {}),
    pipeline: pipelineMetrics(maxStaleness, prepared, trainFrom.policies, waitSeconds),
  };
  const recipeStateKey = filtered.recipeStateKey ?? trainFrom.recipeStateKey;
  const batchKeys = Object.values(filtered.batches).map((b) => b.key);
  const committed = await timer.time('commit', () =>
    pools.orchestrator.commit({
      runId,
      iteration,
      config,
      policies,
      ...(recipeStateKey ? { recipeStateKey } : {}),
      metrics,
      artifacts: artifactKeys(stageResults, batchKeys),
    }),
  );

  const roles = Object.values(filtered.metrics.meanRewardByRole);
  return {
    iteration,
    policies,
    manifestKey: committed.manifestKey,
    ...(committed.configHash ? { configHash: committed.configHash } : {}),
    ...(recipeStateKey ? { recipeStateKey } : {}),
    summary: {
      validTaskRate: filtered.metrics.validTaskRate,
      meanReward: roles.length ? roles.reduce((a, b) => a + b, 0) / roles.length : 0,
      meanRewardByRole: filtered.metrics.meanRewardByRole,
      zeroAdvantageFraction: filtered.metrics.zeroAdvantageFraction,
      rows: filtered.rows,
      seconds: (Date.now() - started) / 1000,
      ...(evaluated ? { heldOutAccuracy: accuracyByBenchmark(evaluated) } : {}),
      ...(startScore ? { startAccuracy: accuracyByBenchmark(startScore) } : {}),
    },
  };
}

const accuracyByBenchmark = (result: EvalResult): Record<string, number> =>
  Object.fromEntries(Object.entries(result.benchmarks).map(([name, b]) => [name, b.accuracy]));

const recipeState = (from: { recipeStateKey?: string }): { recipeStateKey?: string } =>
  from.recipeStateKey ? { recipeStateKey: from.recipeStateKey } : {};

function pipelineMetrics(
  maxStaleness: number,
  behaviour: PolicySet,
  base: PolicySet,
  waitSeconds: number,
): PipelineMetrics {
  const behaviourVersions = versionsOf(behaviour);
  const baseVersions = versionsOf(base);
  const lags = Object.keys(baseVersions).map((p) => (baseVersions[p] ?? 0) - (behaviourVersions[p] ?? 0));
  return { maxStaleness, behaviourVersions, baseVersions, staleness: Math.max(0, ...lags), waitSeconds };
}

function artifactKeys(results: ShardStageResult[], batchKeys: string[]): Record<string, string[]> {
  const out: Record<string, string[]> = { batch: [...batchKeys] };
  for (const r of results) (out[r.stage] ??= []).push(r.key);
  for (const keys of Object.values(out)) keys.sort();
  return out;
}

/**
 * Wall span and busy time per stage, in workflow time (deterministic on replay), and the calls started and
 * finished per stage for the `iterationProgress` query. Every stage starts at a boundary where a pause holds
 * it (the time held is not counted in the stage's span, nor the call as started).
 */
class StageTimer {
  private readonly spans = new Map<StageName, { first: number; last: number; busy: number }>();
  private readonly counts: Partial<Record<StageName, StageCount>> = {};
  paused = false;
  /** The plan's shard count, once planned. */
  shards: number | undefined;
  private inFlight = 0;
  private waiting = 0;
  private latest: StageName | undefined;

  async time<T>(stage: StageName, run: () => Promise<T>): Promise<T> {
    if (this.paused) {
      this.waiting++;
      await condition(() => !this.paused);
      this.waiting--;
    }
    this.latest = stage;
    this.inFlight++;
    const count = (this.counts[stage] ??= { started: 0, finished: 0 });
    count.started++;
    const start = Date.now();
    const value = await run().finally(() => this.inFlight--);
    count.finished++;
    const end = Date.now();
    const span = this.spans.get(stage);
    if (span) {
      span.first = Math.min(span.first, start);
      span.last = Math.max(span.last, end);
      span.busy += end - start;
    } else {
      this.spans.set(stage, { first: start, last: end, busy: end - start });
    }
    return value;
  }

  progress(iteration: number): IterationProgress {
    return {
      iteration,
      paused: this.paused,
      held: this.paused && this.inFlight === 0 && this.waiting > 0,
      ...(this.latest ? { stage: this.latest } : {}),
      stagesInFlight: this.inFlight,
      stages: this.counts,
      ...(this.shards === undefined ? {} : { shards: this.shards }),
    };
  }

  timings(): Partial<Record<StageName, StageTiming>> {
    const out: Partial<Record<StageName, StageTiming>> = {};
    for (const [stage, s] of this.spans)
      out[stage] = { wallSeconds: (s.last - s.first) / 1000, busySeconds: s.busy / 1000 };
    return out;
  }
}
