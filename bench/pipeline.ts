import { setTimeout as delay } from 'node:timers/promises';
import { getJson } from '../activities/clients/storage/codec';
import { manifestKey } from '../activities/clients/storage/keys';
import type { Manifest } from '../contracts/selfplay';
import { startBenchStack, type BenchStack } from './iteration';

/**
 * Several SPICE iterations in the synchronous loop (`pipeline.maxStaleness` 0) and one-step-off
 * (maxStaleness 1), side by side on one stack: the scripted server with a fixed capacity and a long-tailed
 * latency per completion, and the recording trainer taking a simulated update + weight-sync time per step.
 * A first synchronous run with an instant trainer measures the rollout time R per iteration (everything but
 * the update); the update then takes UPDATE_SHARE × R. Per mode: wall time per iteration in steady state
 * (between the first and the last commit) and inference utilisation (time the server worked on some
 * completion ÷ that wall time); last line `async_speedup` = synchronous ÷ asynchronous wall per iteration.
 */
const CAPACITY = Number(process.env.BENCH_CAPACITY ?? 64);
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 300);
const LATENCY_TAIL = Number(process.env.BENCH_LATENCY_TAIL ?? 0.8);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 6);
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
}

export async function main(): Promise<void> {
  if (ITERATIONS < 3) throw new Error(`BENCH_ITERATIONS must be at least 3, got ${ITERATIONS}`);
  let updateMs = 0;
  const stack = await startBenchStack({
    capacity: CAPACITY,
    latencyMs: LATENCY_MS,
    latencyTail: LATENCY_TAIL,
    beforeStep: () => delay(updateMs),
  });
  try {
    const rollout = (await measure(stack, 'bench-calibrate', 0, 3)).perIteration;
    updateMs = UPDATE_SHARE * rollout * 1000;
    const sync = await measure(stack, 'bench-sync', 0, ITERATIONS);
    const overlapped = await measure(stack, 'bench-async', 1, ITERATIONS);
    console.log(
      `inputs: SPICE B=${RUN.batchSize} G=${RUN.groupSize} shards of ${RUN.shardSize}, ${ITERATIONS} iterations per mode; ` +
        `server capacity ${CAPACITY}, latency ${LATENCY_MS} ms × lognormal(σ=${LATENCY_TAIL}) per completion`,
    );
    console.log(
      `rollout_s ${rollout.toFixed(2)} (synchronous iteration with an instant trainer), ` +
        `update_s ${(updateMs / 1000).toFixed(2)} (${UPDATE_SHARE * 100} % of rollout), physical limit ${(1 + UPDATE_SHARE).toFixed(2)}`,
    );
    for (const [mode, m] of [
      ['synchronous  (maxStaleness 0)', sync],
      ['asynchronous (maxStaleness 1)', overlapped],
    ] as const) {
      console.log(
        `${mode}: ${m.perIteration.toFixed(2)} s per iteration, inference utilisation ${m.utilisation.toFixed(3)}`,
      );
    }
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
  for (let i = 1; i <= iterations; i++) {
    const manifest = await getJson<Manifest>(stack.store, manifestKey(runId, i));
    if (!manifest) throw new Error(`${runId} finished without a manifest for iteration ${i}`);
    committed.push(Date.parse(manifest.committedAt));
  }
  const [first, last] = [committed[0] as number, committed.at(-1) as number];
  const window = (last - first) / 1000;
  console.log(
    `${runId}: ${iterations} iterations, commits ${committed.map((t) => ((t - first) / 1000).toFixed(1)).join(', ')} s`,
  );
  return {
    perIteration: window / (iterations - 1),
    utilisation: stack.llm.busySecondsWithin(first, last) / window,
  };
}
