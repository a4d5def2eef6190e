import { setTimeout as delay } from 'node:timers/promises';
import { getJson } from '../activities/clients/storage/codec';
import { manifestKey } from '../activities/clients/storage/keys';
import type { Manifest } from '../contracts/selfplay';
import { startBenchStack, type BenchStack } from './iteration';

/**
 * Several SPICE iterations in the synchronous loop (`pipeline.maxStaleness` 0) and one-step-off
 * (maxStaleness 1), side by side on one stack: the scripted server with a fixed capacity and a long-tailed
 * latency per completion, and the recording trainer taking a simulated update + weight-sync time per step.
 * A first synchronous run with an instant trainer splits an iteration into its rollout R (from the previous
 * commit until the filter starts: sync, plan, propose, gate, solve, judge) and what follows (filter, step,
 * checkpoint, snapshot, commit); the simulated step then makes what follows UPDATE_SHARE × R, so a
 * synchronous iteration takes (1 + UPDATE_SHARE) R and a perfectly overlapped one R. Per mode: wall time per
 * iteration in steady state (between the first and the last commit) and inference utilisation (time the
 * server worked on some completion ÷ that wall time); last line `async_speedup` = synchronous ÷ asynchronous.
 */
const CAPACITY = Number(process.env.BENCH_CAPACITY ?? 64);
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 150);
const LATENCY_TAIL = Number(process.env.BENCH_LATENCY_TAIL ?? 0.8);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 5);
const UPDATE_SHARE = 0.5;
const RUN = {
  batchSize: 32,
  groupSize: 8,
  shardSize: 8,
  seed: 3,
  corpus: { uri: 'test/fixtures/corpus/small.jsonl' },
  // No continue-as-new inside the measured window: it drains the pipeline (docs/architecture.md).
  continueAsNewEvery: 100,
};

interface Measured {
  perIteration: number;
  utilisation: number;
  /** Mean over iterations 2.. of the seconds from the filter's start to the commit. */
  afterRollout: number;
}

/** When each training step started, by `{runId}/{iteration}` (epoch ms). */
const stepStarts = new Map<string, number>();

export async function main(): Promise<void> {
  if (ITERATIONS < 3) throw new Error(`BENCH_ITERATIONS must be at least 3, got ${ITERATIONS}`);
  let updateMs = 0;
  const stack = await startBenchStack({
    capacity: CAPACITY,
    latencyMs: LATENCY_MS,
    latencyTail: LATENCY_TAIL,
    beforeStep: ({ runId, iteration }) => {
      stepStarts.set(`${runId}/${iteration}`, Date.now());
      return delay(updateMs);
    },
  });
  // The asynchronous mode trains rows on the log-probs they were sampled with (behaviour-logprobs.ts): the
  // server returns them, as vLLM does, in every mode alike.
  stack.llm.configure({ tokenIds: 'vllm' });
  try {
    const calibration = await measure(stack, 'bench-calibrate', 0, 3);
    const rollout = calibration.perIteration - calibration.afterRollout;
    updateMs = Math.max(0, UPDATE_SHARE * rollout - calibration.afterRollout) * 1000;
    const sync = await measure(stack, 'bench-sync', 0, ITERATIONS);
    const overlapped = await measure(stack, 'bench-async', 1, ITERATIONS);
    console.log(
      `inputs: SPICE B=${RUN.batchSize} G=${RUN.groupSize} shards of ${RUN.shardSize}, ${ITERATIONS} iterations per mode; ` +
        `server capacity ${CAPACITY}, latency ${LATENCY_MS} ms × lognormal(σ=${LATENCY_TAIL}) per completion`,
    );
    const update = calibration.afterRollout + updateMs / 1000;
    console.log(
      `rollout_s ${rollout.toFixed(2)}, update_s ${update.toFixed(2)} (${((100 * update) / rollout).toFixed(0)} % of rollout: ` +
        `filter, checkpoint, snapshot and commit ${calibration.afterRollout.toFixed(2)} s + simulated step ` +
        `${(updateMs / 1000).toFixed(2)} s), physical limit ${((rollout + update) / rollout).toFixed(2)}`,
    );
    for (const [mode, m] of [
      ['synchronous  (maxStaleness 0)', sync],
      ['asynchronous (maxStaleness 1)', overlapped],
    ] as const) {
      console.log(
        `${mode}: ${m.perIteration.toFixed(2)} s per iteration, inference utilisation ${m.utilisation.toFixed(3)}`,
      );
    }
    // The same split in the measured synchronous run: the limit its own rollout time sets.
    const ownRollout = sync.perIteration - sync.afterRollout;
    console.log(
      `synchronous run's own split: rollout_s ${ownRollout.toFixed(2)}, update_s ${sync.afterRollout.toFixed(2)}, ` +
        `limit ${(sync.perIteration / ownRollout).toFixed(2)}`,
    );
    console.log(`async_speedup ${(sync.perIteration / overlapped.perIteration).toFixed(3)}`);
  } finally {
    await stack.close();
  }
}

/** Runs `iterations` iterations; per iteration between the first and last commit, and utilisation then. */
async function measure(
  stack: BenchStack,
  runId: string,
  maxStaleness: number,
  iterations: number,
): Promise<Measured> {
  // A policy of its own: the recording trainer versions each policy across runs.
  await stack.run(runId, { ...RUN, iterations, training: { policy: runId }, pipeline: { maxStaleness } });
  const committed: number[] = [];
  const afterRollout: number[] = [];
  for (let i = 1; i <= iterations; i++) {
    const manifest = await getJson<Manifest>(stack.store, manifestKey(runId, i));
    const step = stepStarts.get(`${runId}/${i}`);
    if (!manifest || step === undefined)
      throw new Error(`${runId} finished without a manifest or a training step for iteration ${i}`);
    committed.push(Date.parse(manifest.committedAt));
    const filter = manifest.metrics.stages.filter?.wallSeconds ?? 0;
    if (i > 1) afterRollout.push((committed[i - 1]! - step) / 1000 + filter);
  }
  const [first, last] = [committed[0] as number, committed.at(-1) as number];
  const window = (last - first) / 1000;
  console.log(
    `${runId}: ${iterations} iterations, commits ${committed.map((t) => ((t - first) / 1000).toFixed(1)).join(', ')} s`,
  );
  return {
    perIteration: window / (iterations - 1),
    utilisation: stack.llm.busySecondsWithin(first, last) / window,
    afterRollout: afterRollout.reduce((a, b) => a + b, 0) / afterRollout.length,
  };
}
