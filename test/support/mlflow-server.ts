import path from 'node:path';
import { freePort } from './free-port';
import { KERNEL_PYTHON } from './kernel-process';
import { ServerProcess, tempDirForProcess } from './process';

export interface MlflowServer {
  /** http://127.0.0.1:port, a run config's `tracking.mlflow.trackingUri`. */
  url: string;
  stop(): Promise<void>;
}

/**
 * A real MLflow tracking server (PyPI's `mlflow`, in the kernel's virtual environment) on a free port, or on
 * `port` (a test that first points a run at a server not yet up), with a SQLite store in a temp dir.
 */
export async function startMlflow(options: { port?: number } = {}): Promise<MlflowServer> {
  const port = options.port ?? (await freePort());
  const dir = tempDirForProcess('selfplay-mlflow-');
  const url = `http://127.0.0.1:${port}`;
  const mlflow = path.join(path.dirname(KERNEL_PYTHON), 'mlflow');
  const args = [
    'server',
    ...['--host', '127.0.0.1', '--port', String(port), '--workers', '1'],
    ...['--backend-store-uri', `sqlite:///${path.join(dir, 'mlflow.db')}`],
    ...['--default-artifact-root', path.join(dir, 'artifacts')],
  ];
  // Not niced: the test waits on it, and on a loaded 2-core CI machine MLflow's imports alone took 112 s under
  // `nice -n 19`; hence also the generous deadline.
  const server = new ServerProcess(`mlflow on ${url}`, mlflow, args, {
    ...process.env,
    OMP_NUM_THREADS: '1',
  });
  await server.waitUntilReady(
    async () => (await fetch(`${url}/health`, { signal: AbortSignal.timeout(10_000) })).ok,
    300_000,
  );
  return { url, stop: () => server.stop() };
}
