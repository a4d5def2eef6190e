import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { getJson } from '../activities/clients/storage/codec';
import { manifestKey } from '../activities/clients/storage/keys';
import type { Manifest } from '../contracts/selfplay';
import { startBenchStack, type BenchStack, type BenchStackOptions } from './iteration';

/**
 * What the pipeline benchmarks share: several SPICE iterations per mode on one stack, the recording trainer
 * sleeping a simulated update + weight-sync time before each step, and per mode the steady-state wall time
 * per iteration (between the first and the last commit) and how busy the scripted server was meanwhile.
 */

/** SPICE B=32, G=8 in shards of 8; no continue-as-new inside the measured window (it drains the pipeline). */
export const PIPELINED_RUN = {
  batchSize: 32,
  groupSize: 8,
  shardSize: 8,
  seed: 3,
  corpus: { uri: 'test/fixtures/corpus/small.jsonl' },
  continueAsNewEvery: 100,
};

export interface Measured {
  perIteration: number;
  /** Time the server worked on at least one completion ÷ the window. */
  utilisation: number;
  /** Busy slot-seconds ÷ (slots × the window). */
  slotUtilisation: number;
  /** Busy slot-seconds per iteration: the server work an iteration needs. */
  slotSecondsPerIteration: number;
  /** Mean over iterations 2.. of the seconds from the filter's start to the commit. */
  afterRollout: number;
  /**
   * What this process (workers, scripted server, answer-checker threads: everything but Temporal and MinIO)
   * spent over the whole run: CPU seconds per iteration, and the share of the wall its one event loop was busy.
   * A loop near 1 means the process, not the server's slots, set the pace.
   */
  benchCpuPerIteration: number;
  eventLoopBusy: number;
}

export interface TimedStack {
  stack: BenchStack;
  /** Sets the simulated update (ms) each training step sleeps from now on. */
  setUpdateMs(ms: number): void;
  /**
   * Runs `iterations` iterations of `runId` with these pipeline settings, then measures the window from the
   * first commit to commit `measured` (default: the last). A pipelined run's last iterations drain it (no
   * later iteration starts beside their tails), which a run of thousands of iterations meets once: measuring
   * to the commit `maxStaleness` before the last keeps the window in steady state.
   */
  measure(
    runId: string,
    pipeline: Record<string, unknown>,
    iterations: number,
    measured?: number,
  ): Promise<Measured>;
}

export async function startTimedStack(
  options: BenchStackOptions & { capacity: number },
): Promise<TimedStack> {
  let updateMs = 0;
  /** When each training step started, by `{runId}/{iteration}` (epoch ms). */
  const stepStarts = new Map<string, number>();
  const stack = await startBenchStack({
    ...options,
    beforeStep: ({ runId, iteration }) => {
      stepStarts.set(`${runId}/${iteration}`, Date.now());
      return delay(updateMs);
    },
  });
  // The asynchronous modes train rows on the log-probs they were sampled with (behaviour-logprobs.ts): the
  // server returns them, as vLLM does, in every mode alike.
  stack.llm.configure({ tokenIds: 'vllm' });
  return {
    stack,
    setUpdateMs: (ms) => {
      updateMs = ms;
    },
    async measure(runId, pipeline, iterations, measured = iterations) {
      if (!(measured >= 2 && measured <= iterations))
        throw new Error(`measure: ${measured} commits measured of ${iterations} iterations`);
      const [cpuBefore, loopBefore] = [process.cpuUsage(), performance.eventLoopUtilization()];
      // A policy of its own: the recording trainer versions each policy across runs.
      await stack.run(runId, { ...PIPELINED_RUN, iterations, training: { policy: runId }, pipeline });
      const cpu = process.cpuUsage(cpuBefore);
      const loop = performance.eventLoopUtilization(loopBefore);
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
      const [first, last] = [committed[0] as number, committed[measured - 1] as number];
      const window = (last - first) / 1000;
      console.log(
        `${runId}: ${iterations} iterations, commits ${committed.map((t) => ((t - first) / 1000).toFixed(1)).join(', ')} s` +
          (measured < iterations ? `, measured to commit ${measured}` : ''),
      );
      const slotSeconds = stack.llm.slotSecondsWithin(first, last);
      return {
        perIteration: window / (measured - 1),
        utilisation: stack.llm.busySecondsWithin(first, last) / window,
        slotUtilisation: slotSeconds / (options.capacity * window),
        slotSecondsPerIteration: slotSeconds / (measured - 1),
        afterRollout: afterRollout.reduce((a, b) => a + b, 0) / afterRollout.length,
        benchCpuPerIteration: (cpu.user + cpu.system) / 1e6 / iterations,
        eventLoopBusy: loop.utilization,
      };
    },
  };
}

/**
 * A synchronous run with an instant trainer: the rollout R (from the previous commit until the filter starts)
 * and what follows it; sets the simulated step so that what follows is `updateShare` × R.
 */
export async function calibrate(
  timed: TimedStack,
  updateShare: number,
): Promise<{ rollout: number; update: number; afterRollout: number; updateMs: number }> {
  timed.setUpdateMs(0);
  const calibration = await timed.measure('bench-calibrate', { maxStaleness: 0 }, 3);
  const rollout = calibration.perIteration - calibration.afterRollout;
  const updateMs = Math.max(0, updateShare * rollout - calibration.afterRollout) * 1000;
  timed.setUpdateMs(updateMs);
  const update = calibration.afterRollout + updateMs / 1000;
  return { rollout, update, afterRollout: calibration.afterRollout, updateMs };
}
