import os from 'node:os';
import { NativeConnection } from '@temporalio/worker';
import { createPoolWorkers, POOLS, queueNames, type Pool } from './pools';
import { depsFromEnv } from './deps';
import { ensureSearchAttributes } from '../infra/temporal/search-attributes';
import { temporalConnectionFromEnv } from '../config/temporal-connection';
import { startMetricsFromEnv, workersReadiness, type PoolState } from './metrics';

/**
 * Worker process: `tsx workers/main.ts [orchestrator,rollout,trainer]` (default: all three, for a local run).
 *   TEMPORAL_ADDRESS (localhost:7233), TEMPORAL_NAMESPACE (default), TLS and API key (config/temporal-connection.ts),
 *   SELFPLAY_QUEUE_PREFIX (selfplay),
 *   SELFPLAY_POOLS (alternative to the argument), plus the storage/inference/trainer variables of config/env.ts.
 *   SELFPLAY_METRICS_PORT / SELFPLAY_PROJECT_METRICS_PORT: Prometheus endpoints (off by default; workers/metrics.ts),
 *   on SELFPLAY_METRICS_HOST (127.0.0.1); the project's also answers the probes /healthz and /readyz.
 *   SELFPLAY_WORKFLOW_BUNDLE: a workflow bundle built ahead (the container image builds one), instead of bundling
 *   the workflows at start.
 * SIGINT/SIGTERM drain the workers: running activities finish or heartbeat out, nothing is lost.
 */
async function main(): Promise<void> {
  const pools = parsePools(process.argv[2] ?? process.env.SELFPLAY_POOLS ?? POOLS.join(','));
  const { namespace, ...connectionOptions } = temporalConnectionFromEnv();
  const { address } = connectionOptions;
  const deps = depsFromEnv();
  const states: PoolState[] = [];
  // Before the first connection: the Temporal runtime is created with its Prometheus exporter or not at all.
  const metrics = await startMetricsFromEnv(process.env, () => workersReadiness(states));
  const connection = await NativeConnection.connect(connectionOptions);
  if (pools.includes('orchestrator')) await ensureSearchAttributes(connection, namespace);
  const workers = await createPoolWorkers({
    connection,
    namespace,
    pools,
    queues: queueNames(process.env.SELFPLAY_QUEUE_PREFIX),
    deps,
    identity: `${os.hostname()}:${process.pid}`,
    ...(process.env.SELFPLAY_WORKFLOW_BUNDLE
      ? { workflowBundle: { codePath: process.env.SELFPLAY_WORKFLOW_BUNDLE } }
      : {}),
  });
  states.push(
    ...workers.map((worker, i) => ({ pool: pools[i] ?? 'pool', getState: () => worker.getState() })),
  );
  console.log(
    `selfplay worker ${process.pid}: pools ${pools.join(', ')} on ${address}/${namespace}, storage ${deps.store.root}`,
  );
  if (metrics.temporal) console.log(`  Temporal runtime metrics on http://${metrics.temporal}/metrics`);
  if (metrics.project) console.log(`  project metrics on http://${metrics.project}/metrics`);
  try {
    await Promise.all(workers.map((w) => w.run()));
  } finally {
    await connection.close();
    await metrics.close();
  }
}

function parsePools(spec: string): Pool[] {
  const names = spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !(POOLS as readonly string[]).includes(n));
  if (unknown.length || names.length === 0) {
    throw new Error(
      `unknown pool(s) ${unknown.join(', ') || '(none given)'}: choose from ${POOLS.join(', ')}`,
    );
  }
  return names as Pool[];
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
