import { calibrate, PIPELINED_RUN, startTimedStack } from './pipelined-runs';

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

export async function main(): Promise<void> {
  if (ITERATIONS < 3) throw new Error(`BENCH_ITERATIONS must be at least 3, got ${ITERATIONS}`);
  const timed = await startTimedStack({
    capacity: CAPACITY,
    latencyMs: LATENCY_MS,
    latencyTail: LATENCY_TAIL,
  });
  try {
    const { rollout, update, afterRollout, updateMs } = await calibrate(timed, UPDATE_SHARE);
    const sync = await timed.measure('bench-sync', { maxStaleness: 0 }, ITERATIONS);
    const overlapped = await timed.measure('bench-async', { maxStaleness: 1 }, ITERATIONS);
    console.log(
      `inputs: SPICE B=${PIPELINED_RUN.batchSize} G=${PIPELINED_RUN.groupSize} shards of ${PIPELINED_RUN.shardSize}, ${ITERATIONS} iterations per mode; ` +
        `server capacity ${CAPACITY}, latency ${LATENCY_MS} ms × lognormal(σ=${LATENCY_TAIL}) per completion`,
    );
    console.log(
      `rollout_s ${rollout.toFixed(2)}, update_s ${update.toFixed(2)} (${((100 * update) / rollout).toFixed(0)} % of rollout: ` +
        `filter, checkpoint, snapshot and commit ${afterRollout.toFixed(2)} s + simulated step ` +
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
    await timed.stack.close();
  }
}
