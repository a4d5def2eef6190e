/**
 * One plan of the corpus benchmark, in a process of its own so its peak RSS is the plan's alone: the real plan
 * activity (SPICE, B from BENCH_CORPUS_B) over the corpus at argv[2], storage at argv[3], iteration argv[4].
 * Prints one JSON line: seconds, peak RSS, heartbeats, the index's figures.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { openStore } from '../activities/clients/storage';
import { planActivities, type PlanInput } from '../activities/stages/plan';
import { RECIPES } from '../activities/recipes';
import { InferencePool } from '../activities/clients/inference';
import { loadWorkerEnv } from '../config/env';
import { resolveRunConfig } from '../config/schema';
import type { PlanResult } from '../contracts/selfplay';

async function main(): Promise<void> {
  const [uri, storage, iteration] = process.argv.slice(2);
  if (!uri || !storage || !iteration) throw new Error('usage: corpus-plan.ts CORPUS STORAGE ITERATION');
  const resolved = resolveRunConfig({
    recipe: 'spice',
    batchSize: Number(process.env.BENCH_CORPUS_B ?? 1024),
    shardSize: 64,
    corpus: { uri },
  });
  if (!resolved.ok) throw new Error(resolved.problems.join('; '));
  const store = openStore(storage);
  // The corpus the operator names is this benchmark's one input root.
  const workerEnv = loadWorkerEnv({ SELFPLAY_INPUT_ROOTS: uri });
  const deps = { store, env: workerEnv, inference: new InferencePool(), recipes: RECIPES };
  const activities = planActivities(deps);
  const input: PlanInput = {
    runId: `bench-corpus-${process.pid}`,
    iteration: Number(iteration),
    config: resolved.config,
    versions: { policy: 0 },
  };
  let heartbeats = 0;
  const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 3_000 });
  env.on('heartbeat', () => heartbeats++);
  const t0 = performance.now();
  const result: PlanResult = await env.run((i: PlanInput) => activities.plan(i), input);
  const seconds = (performance.now() - t0) / 1000;
  const planned = result.shards.reduce((n, s) => n + s.documents, 0);
  console.log(
    JSON.stringify({
      seconds,
      peakRssMb: process.resourceUsage().maxRSS / 1024,
      heartbeats,
      planned,
      segments: result.corpus.segments,
    }),
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
