import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { resolveRunConfig } from '../config/schema';
import {
  completionLatency,
  configPatchSchema,
  DEFAULT_CONFIG,
  type LengthBin,
} from '../test/support/scripted-llm/config';
import { clientBudget, longestLength, permitsPerBusySlot, worstRequestSeconds } from './client-budget';
import { calibrate, PIPELINED_RUN, startTimedStack, type Measured } from './pipelined-runs';

/**
 * Long generation tails against the inference server's slots: SPICE (B=32, G=8) for several iterations in
 * the synchronous loop, one-step-off and streaming at `--max-staleness` k (default 3), side by side on one
 * stack. Each completion holds one of the scripted server's `--capacity` slots for a time proportional to its
 * length: `--latency-ms` × a log-normal of median 1 and σ `--sigma`, or × tokens ÷ median tokens of a recorded
 * histogram (`--lengths FILE`, JSON `[{"tokens": 512, "count": 40}, ...]`). The simulated update is half the
 * calibrated rollout, as in the pipeline benchmark. Per mode: seconds per iteration and
 * `inference_utilization` = busy slot-seconds ÷ (slots × wall), over `--iterations` commits in steady state
 * (a mode at staleness k runs k more iterations, which drain its pipeline after the window); then the model's
 * limit: the server work an iteration needs ÷ the slots, or the update when longer, and the bound staleness k
 * sets (iteration n+k+1 starts only once n has committed, so k+1 periods hold at least a rollout and an
 * update). Last line `tail_utilization` is the fastest mode's utilisation. `--streaming-only` runs streaming
 * alone after the calibration (a quick look at one `--max-staleness`; its figure has no baseline beside it).
 *
 * Why k = 3 by default: each stage of a shard waits for its longest completion, so one iteration's rollout R
 * keeps the slots busy only part of its length (R ≈ 2W for W seconds of server work at the old budget, 1.35W at
 * today's); with the update U = R/2, k = 1 allows at most 2W/(R + U), 0.66 then and 0.99 now, while k = 3 leaves
 * the server's work as the only bound with room for a slower rollout. Every row is still sampled at most k
 * versions behind the one it trains (the kernel refuses older rows) and corrected by `offPolicy: tis`.
 *
 * The workers keep `client-budget.ts`'s budget in flight: a request of G = 8 choices holds its 8 permits until
 * its longest choice ends, about 3 permits per busy slot at σ 1, so at twice the slots (the pipeline
 * benchmark's budget) streaming kept them only 66 % busy, whatever k (bench/README.md); the budget is the
 * slots × (that factor + 1), and the run refuses one under which a request could outwait the client's timeout.
 *
 * The defaults make the server the bottleneck on a small CPU machine, as the benchmark claims to measure: an
 * iteration's ~2,300 completions cost the orchestration (workers, Temporal, the scripted server's HTTP) about
 * 10–18 s of CPU on 2 shared cores, as much as the server's work at 150 ms per completion (the pipeline
 * benchmark's latency; 8.9 s per iteration on 64 slots), so a run could not tell slots idle in the tail from
 * slots idle while the CPU caught up. At 1 s the server's work is about 50 s per iteration (49.88 s measured), three to five times the
 * CPU's even with other jobs on the machine, and the tail (up to 20 s per completion) is what remains idle. The
 * slots stay at 64: raising the latency, not cutting the slots, keeps the queue at the server short in time (at
 * σ 1 at most about 2 minutes for a request, printed, inside the client's 600 s
 * `inference.requestTimeoutSeconds`). A run takes about half an hour (bench/README.md has its figures).
 */
const UPDATE_SHARE = 0.5;

/** The modes side by side: streaming at `--max-staleness` k, the others as named. */
const modes = (k: number): Array<[string, { maxStaleness: number; streaming?: boolean }]> => [
  ['synchronous', { maxStaleness: 0 }],
  ['one-step-off', { maxStaleness: 1 }],
  [`streaming k=${k}`, { maxStaleness: k, streaming: true }],
];

export async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      sigma: { type: 'string', default: '1.0' },
      lengths: { type: 'string' },
      capacity: { type: 'string', default: '64' },
      'latency-ms': { type: 'string', default: '1000' },
      iterations: { type: 'string', default: '4' },
      'max-staleness': { type: 'string', default: '3' },
      // A quick look at one staleness setting: streaming alone after the calibration, no baseline beside it.
      'streaming-only': { type: 'boolean', default: false },
    },
  });
  const sigma = Number(values.sigma);
  const capacity = Number(values.capacity);
  const iterations = Number(values.iterations);
  const latencyMs = Number(values['latency-ms']);
  if (!(sigma >= 0 && sigma <= 3)) throw new Error(`--sigma must be within [0, 3], got ${values.sigma}`);
  if (!Number.isInteger(capacity) || capacity < 1)
    throw new Error(`--capacity must be a positive integer, got ${values.capacity}`);
  if (!(latencyMs > 0))
    throw new Error(`--latency-ms must be a positive number, got ${values['latency-ms']}`);
  if (!Number.isInteger(iterations) || iterations < 3)
    throw new Error(`--iterations must be an integer of at least 3, got ${values.iterations}`);
  const maxStaleness = Number(values['max-staleness']);
  if (!Number.isInteger(maxStaleness) || maxStaleness < 1 || maxStaleness > 8)
    throw new Error(`--max-staleness must be an integer within [1, 8], got ${values['max-staleness']}`);
  const lengths = values.lengths ? readLengths(values.lengths) : undefined;
  const client = sizeClient(capacity, latencyMs / 1000, sigma, lengths);
  console.log(client.line);

  const timed = await startTimedStack({
    capacity,
    latencyMs,
    latencyTail: sigma,
    ...(lengths ? { lengths } : {}),
    inferenceConcurrency: client.budget,
  });
  try {
    const { rollout, update } = await calibrate(timed, UPDATE_SHARE);
    const measured: Array<[string, Measured]> = [];
    // Each mode measures the same number of periods in steady state: k more iterations drain the pipeline.
    const chosen = modes(maxStaleness).filter(([, p]) => !values['streaming-only'] || p.streaming);
    for (const [mode, pipeline] of chosen) {
      const runId = `bench-tails-${mode.replace(/[ =]/g, '')}`;
      const run = iterations + pipeline.maxStaleness;
      measured.push([mode, await timed.measure(runId, pipeline, run, iterations)]);
    }
    const lengthsOf = values.lengths
      ? `lengths replayed from ${values.lengths} (${lengths?.length} bins)`
      : `lognormal σ=${sigma}`;
    console.log(
      `inputs: SPICE B=${PIPELINED_RUN.batchSize} G=${PIPELINED_RUN.groupSize} shards of ${PIPELINED_RUN.shardSize}, ` +
        `${iterations} iterations per mode; ${capacity} slots, ${latencyMs} ms × length (${lengthsOf}) per completion; ` +
        `calibrated rollout_s ${rollout.toFixed(2)}, update_s ${update.toFixed(2)}`,
    );
    for (const [mode, m] of measured) {
      console.log(
        `${mode.padEnd(15)} ${m.perIteration.toFixed(2)} s/iteration, inference_utilization ${m.slotUtilisation.toFixed(3)}; ` +
          `bench process ${m.benchCpuPerIteration.toFixed(1)} CPU-s/iteration, event loop busy ${m.eventLoopBusy.toFixed(2)}`,
      );
    }
    // The work is the same requests in every mode (each completion's length is fixed by its request).
    const work = Math.max(...measured.map(([, m]) => m.slotSecondsPerIteration)) / capacity;
    const limit = Math.max(work, update);
    console.log(
      `limit: ${work.toFixed(2)} s of server work per iteration (busy slot-seconds ÷ ${capacity} slots), update ` +
        `${update.toFixed(2)} s: at best ${limit.toFixed(2)} s/iteration, inference_utilization ${(work / limit).toFixed(3)}`,
    );
    // At maxStaleness k iteration n+k+1 starts only once n has committed: k+1 periods hold a rollout and an
    // update (the synchronous calibration's; a loaded server lengthens a rollout, so this is a lower bound).
    for (const k of new Set([1, maxStaleness])) {
      const period = (rollout + update) / (k + 1);
      console.log(
        `limit at maxStaleness ${k}: (rollout + update) / ${k + 1} = ${period.toFixed(2)} s/iteration, ` +
          `inference_utilization ${(work / Math.max(limit, period)).toFixed(3)}`,
      );
    }
    const [best, fastest] = measured.reduce((a, b) => (b[1].perIteration < a[1].perIteration ? b : a));
    console.log(`best mode: ${best}`);
    console.log(`tail_utilization ${fastest.slotUtilisation.toFixed(3)}`);
  } finally {
    await timed.stack.close();
  }
}

/**
 * The workers' completions in flight (`client-budget.ts`): the permits SPICE's G-choice solves hold per busy
 * slot, plus a round of slots queued, checked against the client's request timeout.
 */
function sizeClient(
  capacity: number,
  latencyS: number,
  sigma: number,
  lengths: LengthBin[] | undefined,
): { budget: number; line: string } {
  const scripted = { ...DEFAULT_CONFIG, latencyMs: 1, latencyTail: sigma, ...(lengths ? { lengths } : {}) };
  const length = (u1: number, u2: number): number => completionLatency(scripted, 'solve', u1, u2);
  const n = PIPELINED_RUN.groupSize;
  const permits = permitsPerBusySlot(length, n);
  const budget = clientBudget(capacity, permits);
  const worst = worstRequestSeconds(budget, capacity, n, longestLength(length) * latencyS);
  const timeout = requestTimeoutSeconds();
  if (worst > timeout)
    throw new Error(
      `a request could wait up to ${worst.toFixed(0)} s behind the client's ${budget} completions in flight, ` +
        `past the ${timeout} s request timeout: lower --latency-ms or the tail`,
    );
  return {
    budget,
    line:
      `client: ${budget} completions in flight = ${capacity} slots × (1 + ${permits.toFixed(2)} permits held per ` +
      `busy slot by requests of n=${n}); a request waits at most ${worst.toFixed(0)} s ` +
      `(request timeout ${timeout} s)`,
  };
}

/** The client's request timeout in the runs the bench starts (their config's `inference.requestTimeoutSeconds`). */
function requestTimeoutSeconds(): number {
  const resolved = resolveRunConfig({ recipe: 'spice', ...PIPELINED_RUN });
  if (!resolved.ok) throw new Error(`the bench's run config: ${resolved.problems.join('; ')}`);
  return resolved.config.inference.requestTimeoutSeconds;
}

/** A recorded length histogram: JSON `[{tokens, count}, ...]`, checked as the scripted server checks it. */
function readLengths(file: string): LengthBin[] {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`--lengths ${file}: cannot read a JSON histogram (${(err as Error).message})`);
  }
  const parsed = configPatchSchema.shape.lengths.safeParse(raw);
  if (!parsed.success || !parsed.data)
    throw new Error(
      `--lengths ${file}: expected [{"tokens": <positive>, "count": <integer ≥ 0>}, ...] with a positive count: ` +
        (parsed.error?.issues
          .map((i) => (i.path.length ? `${i.path.join('.')}: ` : '') + i.message)
          .join('; ') ?? 'empty'),
    );
  return parsed.data;
}
