import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Runtime } from '@temporalio/worker';
import { metrics as projectRegistry, type Registry } from '../activities/lib/metrics';

/**
 * Prometheus endpoints of a worker process, both off unless asked for:
 *   SELFPLAY_METRICS_PORT          the Temporal runtime's own metrics (`temporal_*`: task slots, poll and
 *                                  schedule-to-start latencies, activity/workflow execution counts), served
 *                                  by the SDK core at http://HOST:PORT/metrics
 *   SELFPLAY_PROJECT_METRICS_PORT  the project's metrics (`selfplay_*`: completions, tokens, stage durations,
 *                                  rewards, valid-task rate), served by a small node:http server at /metrics,
 *                                  which also answers the orchestrator's probes: /healthz (live: the process
 *                                  answers) and /readyz (ready: every pool's worker is polling)
 * Each takes a port or HOST:PORT. A bare port binds on SELFPLAY_METRICS_HOST, by default 127.0.0.1: a worker on a
 * developer's machine keeps its metrics and probes to that machine; a cluster sets the pod's address (the chart
 * sets 0.0.0.0, with a NetworkPolicy that admits only the scrapers).
 */
export interface MetricsEndpoints {
  /** `host:port` of the Temporal runtime's exporter, if enabled. */
  temporal?: string;
  /** `host:port` of the project's exporter, if enabled. */
  project?: string;
  close(): Promise<void>;
}

/** The host a bare port binds on when SELFPLAY_METRICS_HOST is unset. */
export const DEFAULT_METRICS_HOST = '127.0.0.1';

/** SELFPLAY_METRICS_HOST: an address or host name to bind (`0.0.0.0`, a pod IP); empty → loopback. */
export function metricsHost(value: string | undefined): string {
  const v = value?.trim();
  if (!v) return DEFAULT_METRICS_HOST;
  if (!/^[^\s:/]+$/.test(v)) {
    throw new Error(
      `SELFPLAY_METRICS_HOST=${JSON.stringify(value)}: expected an IPv4 address or host name (127.0.0.1, 0.0.0.0)`,
    );
  }
  return v;
}

/** `9464` → `HOST:9464` (`host`, loopback by default); `10.0.0.5:9464` stays; empty → undefined (disabled). */
export function bindAddress(
  name: string,
  value: string | undefined,
  host: string = DEFAULT_METRICS_HOST,
): string | undefined {
  const v = value?.trim();
  if (!v) return undefined;
  const m = /^(?:(.+):)?(\d{1,5})$/.exec(v);
  const port = m ? Number(m[2]) : NaN;
  if (!m || !(port >= 0 && port <= 65535)) {
    throw new Error(`${name}=${JSON.stringify(value)}: expected a port (9464) or HOST:PORT (127.0.0.1:9464)`);
  }
  return `${m[1] ?? host}:${port}`;
}

/**
 * Installs the Temporal runtime with a Prometheus exporter. Must run before anything creates the runtime
 * (the first NativeConnection or Worker), once per process.
 */
export function installRuntimeMetrics(address: string): void {
  Runtime.install({ telemetryOptions: { metrics: { prometheus: { bindAddress: address } } } });
}

/** A readiness verdict for /readyz: `detail` says why (or what is running), for whoever reads the probe. */
export interface Readiness {
  ready: boolean;
  detail: string;
}

/** The state of each pool's worker, as `Worker.getState()` reports it. */
export interface PoolState {
  pool: string;
  getState(): string;
}

/**
 * Ready while every pool's worker is RUNNING (polling its task queue): not before the workers exist, and no
 * longer once one drains on SIGTERM, so a rollout waits for the new pod to poll before it stops an old one.
 */
export function workersReadiness(workers: readonly PoolState[]): Readiness {
  if (workers.length === 0) return { ready: false, detail: 'starting: no worker created yet' };
  const states = workers.map((w) => `${w.pool} ${w.getState()}`);
  return { ready: workers.every((w) => w.getState() === 'RUNNING'), detail: states.join(', ') };
}

const NOT_STARTED: () => Readiness = () => ({ ready: false, detail: 'starting' });

/**
 * Serves `registry.expose()` at GET /metrics (and /), plus the probes: /healthz answers 200 whenever the event
 * loop does (liveness), /readyz answers 200 or 503 by `readiness` (readiness). Resolves once listening.
 */
export async function serveProjectMetrics(
  address: string,
  registry: Registry = projectRegistry,
  readiness: () => Readiness = NOT_STARTED,
): Promise<http.Server> {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon);
  const port = Number(address.slice(colon + 1));
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
    } else if (path === '/metrics' || path === '/') {
      const body = registry.expose();
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
      res.end(req.method === 'HEAD' ? undefined : body);
    } else if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    } else if (path === '/readyz') {
      const { ready, detail } = readiness();
      res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' }).end(`${detail}\n`);
    } else {
      res
        .writeHead(404, { 'content-type': 'text/plain' })
        .end('not found: try /metrics, /healthz or /readyz\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

/** The bound `host:port` of a listening server (useful with port 0). */
export function serverAddress(server: http.Server): string {
  const a = server.address() as AddressInfo;
  return `${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
}

/** Starts what the environment asks for; call before the first connection. */
export async function startMetricsFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  readiness?: () => Readiness,
): Promise<MetricsEndpoints> {
  const host = metricsHost(env.SELFPLAY_METRICS_HOST);
  const temporal = bindAddress('SELFPLAY_METRICS_PORT', env.SELFPLAY_METRICS_PORT, host);
  const project = bindAddress('SELFPLAY_PROJECT_METRICS_PORT', env.SELFPLAY_PROJECT_METRICS_PORT, host);
  if (temporal) installRuntimeMetrics(temporal);
  const server = project ? await serveProjectMetrics(project, projectRegistry, readiness) : undefined;
  return {
    ...(temporal ? { temporal } : {}),
    ...(server ? { project: serverAddress(server) } : {}),
    close: () =>
      new Promise<void>((resolve) => {
        if (!server) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
