import { printStages, runOneIteration } from './iteration';

/**
 * One SPICE iteration at the paper's B=128, G=8 against the scripted server with a fixed capacity (the most
 * completions it works on at once) and latency per completion. The server can deliver at most
 * capacity/latency completions per second; utilization is what the pipeline achieved over the whole
 * iteration (propose to commit, orchestration included) divided by that. Stages flowing per shard keep it high.
 */
const CAPACITY = Number(process.env.BENCH_CAPACITY ?? 128);
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 500);

export async function main(): Promise<void> {
  const { wallSeconds, llm, manifest } = await runOneIteration({
    capacity: CAPACITY,
    latencyMs: LATENCY_MS,
    config: {
      batchSize: 128,
      groupSize: 8,
      shardSize: 32,
      corpus: { uri: 'test/fixtures/corpus/small.jsonl' },
    },
  });
  const { completions, maxConcurrency } = llm;
  const ideal = CAPACITY / (LATENCY_MS / 1000);
  const achieved = completions / wallSeconds;
  const busySeconds = completions / ideal;
  console.log(
    `server: capacity ${CAPACITY} completions, ${LATENCY_MS} ms each -> at most ${ideal.toFixed(1)} completions/s`,
  );
  console.log(
    `iteration: ${completions} completions in ${wallSeconds.toFixed(2)} s (max concurrency seen ${maxConcurrency})`,
  );
  printStages(manifest);
  console.log(`achieved ${achieved.toFixed(1)} completions/s`);
  console.log(`orchestration_overhead_s ${(wallSeconds - busySeconds).toFixed(2)}`);
  console.log(`pipeline_utilization ${(achieved / ideal).toFixed(3)}`);
}
