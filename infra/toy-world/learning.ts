/**
 * One toy-world SPICE run on a kernel of its own, read back as a learning curve: the held-out accuracy the
 * run's evaluation committed at version 0 and after every step, with the valid-task rate, the mean rewards
 * and the Reasoner pass rates per iteration. Shared by the learning test, its controls and
 * `npm run bench -- learning`.
 */
import { Client, Connection } from '@temporalio/client';
import { getJson } from '../../activities/clients/storage/codec';
import { manifestKey } from '../../activities/clients/storage/keys';
import { openStore } from '../../activities/clients/storage';
import type { Manifest } from '../../contracts/selfplay';
import { selfPlayRun } from '../../workflows';
import { queueNames } from '../../workers/pools';
import type { ToyWorld } from './prepare';
import { TOY_WORLD_BENCHMARK, toyWorldRunConfig } from './run-config';

export interface IterationPoint {
  iteration: number;
  heldOutAccuracy: number;
  validTaskRate: number;
  meanRewardByRole: Record<string, number>;
  seconds: number;
}

export interface LearningCurve {
  runId: string;
  /** Held-out accuracy of the warm-started model (version 0). */
  startAccuracy: number;
  points: IterationPoint[];
}

export interface LearningRunOptions {
  runId: string;
  world: ToyWorld;
  /** Where the run's storage lives (a directory or s3://bucket/prefix). */
  storageUri: string;
  temporalAddress: string;
  queuePrefix: string;
  /** Config fields over the toy world's run config (iterations, seed, learning rate, controls). */
  overrides: (base: Record<string, unknown>) => Record<string, unknown>;
}

/** Runs the workflow to its end (the caller has started a worker and a kernel) and reads its curve. */
export async function runLearningCurve(options: LearningRunOptions): Promise<LearningCurve> {
  const pools = queueNames(options.queuePrefix);
  const config = options.overrides({ ...toyWorldRunConfig(options.world), pools });
  const connection = await Connection.connect({ address: options.temporalAddress });
  try {
    const outcome = await new Client({ connection }).workflow.execute(selfPlayRun, {
      workflowId: options.runId,
      taskQueue: pools.orchestrator,
      args: [config],
    });
    return await readLearningCurve(options.storageUri, options.runId, outcome.lastCommitted);
  } finally {
    await connection.close();
  }
}

const accuracyMetric = `eval.${TOY_WORLD_BENCHMARK}.accuracy`;

export async function readLearningCurve(
  storageUri: string,
  runId: string,
  iterations: number,
): Promise<LearningCurve> {
  const store = openStore(storageUri);
  const points: IterationPoint[] = [];
  let startAccuracy: number | undefined;
  for (let iteration = 1; iteration <= iterations; iteration++) {
    const manifest = await getJson<Manifest>(store, manifestKey(runId, iteration));
    if (!manifest) throw new Error(`${runId}: iteration ${iteration} has no manifest`);
    const metrics = manifest.metrics as unknown as Record<string, unknown>;
    const accuracy = metrics[accuracyMetric];
    if (typeof accuracy !== 'number')
      throw new Error(`${runId}: iteration ${iteration} has no ${accuracyMetric}`);
    const start = metrics[`${accuracyMetric}.start`];
    if (iteration === 1 && typeof start === 'number') startAccuracy = start;
    points.push({
      iteration,
      heldOutAccuracy: accuracy,
      validTaskRate: Number(metrics['validTaskRate'] ?? NaN),
      meanRewardByRole: (metrics['meanRewardByRole'] ?? {}) as Record<string, number>,
      seconds: Number(metrics['seconds'] ?? NaN),
    });
  }
  if (startAccuracy === undefined) throw new Error(`${runId}: no held-out accuracy at version 0`);
  return { runId, startAccuracy, points };
}
