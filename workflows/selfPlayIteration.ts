import type {
  IterationInput,
  IterationMetrics,
  IterationResult,
  ShardStageResult,
  StageName,
  StageTiming,
} from './contracts';
import { condition, setHandler } from '@temporalio/workflow';
import { poolActivities } from './activity-options';
import {
  CONTROL_DESCRIPTIONS,
  iterationPausedSignal,
  iterationProgressQuery,
  type IterationProgress,
  type StageCount,
} from './messages';

/**
 * One self-play iteration: propose → gate → solve ×G → judge → filter → update → commit.
 * The first four stages flow per shard, so a shard's tasks go on to solve as soon as its gate passes and
 * inference never waits for the slowest shard; only filter and update wait for every shard. Every activity
 * reads and writes storage by key, so a retried or replayed iteration redoes nothing that was finished.
 * The parent forwards pause/resume by signal; a paused iteration starts no new stage (stages already running
 * finish) until resumed.
 */
export async function selfPlayIteration(input: IterationInput): Promise<IterationResult> {
  const { config, runId, iteration, policyVersion } = input;
  const pools = poolActivities(config);
  const timer = new StageTimer();
  setHandler(iterationPausedSignal, (paused) => {
    timer.paused = paused;
  });
  setHandler(iterationProgressQuery, () => timer.progress(iteration), {
    description: CONTROL_DESCRIPTIONS.iterationProgress,
  });
  const started = Date.now();

  // Sampling starts only once the trainer holds the committed version and every inference server serves
  // it, verified; after a crash or preemption this is where both are brought back.
  const committedRefs = {
    ...checkpoint(input.checkpointUri),
    ...(input.snapshot ? { snapshot: input.snapshot } : {}),
  };
  let snapshot = await timer.time('sync', () =>
    pools.trainer.prepareTrainer({ runId, config, version: policyVersion, ...committedRefs }),
  );
  if (snapshot) {
    const current = snapshot;
    await timer.time('sync', () => pools.rollout.syncWeights({ config, snapshot: current }));
  }
  const sampling = snapshot ? { snapshot } : {};

  const plan = await timer.time('plan', () =>
    pools.orchestrator.plan({ runId, iteration, config, policyVersion, ...recipeState(input) }),
  );
  timer.shards = plan.shards.length;
  const shardResults = await Promise.all(
    plan.shards.map(async ({ shard }) => {
      const stageInput = {
        runId,
        iteration,
        shard,
        config,
        policyVersion,
        ...recipeState(input),
        ...sampling,
      };
      const propose = await timer.time('propose', () => pools.rollout.propose(stageInput));
      const gate = await timer.time('gate', () => pools.orchestrator.gate(stageInput));
      const solve = await timer.time('solve', () => pools.rollout.solve(stageInput));
      const judge = await timer.time('judge', () => pools.judge.judge(stageInput));
      return [propose, gate, solve, judge];
    }),
  );
  const shards = plan.shards.map((s) => s.shard);
  const filtered = await timer.time('filter', () =>
    pools.orchestrator.filter({ runId, iteration, config, policyVersion, shards, ...recipeState(input) }),
  );
  const updated = await timer.time('update', () =>
    pools.trainer.update({
      runId,
      iteration,
      config,
      policyVersion,
      batchUri: filtered.batchUri,
      rows: filtered.rows,
      sha256: filtered.sha256,
      ...checkpoint(input.checkpointUri),
    }),
  );
  // A skipped update (empty batch) leaves the committed weights as they were.
  const checkpointUri = updated.checkpointUri ?? input.checkpointUri;
  snapshot = updated.snapshot ?? snapshot;
  const refs = { ...checkpoint(checkpointUri), ...(snapshot ? { snapshot } : {}) };

  const stageResults: ShardStageResult[] = shardResults.flat();
  const metrics: IterationMetrics = {
    recipe: filtered.metrics,
    train: updated.train,
    stages: timer.timings(),
    reusedUnits: stageResults.reduce((sum, r) => sum + r.reusedUnits, 0),
  };
  const recipeStateKey = filtered.recipeStateKey ?? input.recipeStateKey;
  const committed = await timer.time('commit', () =>
    pools.orchestrator.commit({
      runId,
      iteration,
      config,
      policyVersion: updated.policyVersion,
      ...(recipeStateKey ? { recipeStateKey } : {}),
      ...refs,
      metrics,
      artifacts: artifactKeys(stageResults, filtered.batchKey),
    }),
  );

  const roles = Object.values(filtered.metrics.meanRewardByRole);
  return {
    iteration,
    policyVersion: updated.policyVersion,
    manifestKey: committed.manifestKey,
    ...(committed.configHash ? { configHash: committed.configHash } : {}),
    ...(recipeStateKey ? { recipeStateKey } : {}),
    ...refs,
    metrics,
    summary: {
      validTaskRate: filtered.metrics.validTaskRate,
      meanReward: roles.length ? roles.reduce((a, b) => a + b, 0) / roles.length : 0,
      meanRewardByRole: filtered.metrics.meanRewardByRole,
      zeroAdvantageFraction: filtered.metrics.zeroAdvantageFraction,
      rows: filtered.rows,
      seconds: (Date.now() - started) / 1000,
    },
  };
}

const checkpoint = (uri: string | undefined): { checkpointUri?: string } =>
  uri ? { checkpointUri: uri } : {};

const recipeState = (input: IterationInput): { recipeStateKey?: string } =>
  input.recipeStateKey ? { recipeStateKey: input.recipeStateKey } : {};

function artifactKeys(results: ShardStageResult[], batchKey: string): Record<string, string[]> {
  const out: Record<string, string[]> = { batch: [batchKey] };
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
