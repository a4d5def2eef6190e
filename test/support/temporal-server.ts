import path from 'node:path';
import { Connection } from '@temporalio/client';
import { searchAttributeFlags } from '../../infra/temporal/search-attributes';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';
import { freePort } from './free-port';
import { ServerProcess, tempDirForProcess, toolBinary } from './process';

export interface TemporalDevServerOptions {
  /** SQLite file; by default a temp file, so `restart()` keeps workflows (like a real server's database). */
  dbFile?: string;
  port?: number;
  /** Serve the Web UI on this port; by default the server runs headless. */
  uiPort?: number;
  /** `--dynamic-config-value` entries, e.g. `{ 'limit.historyCount.suggestContinueAsNew': 60 }`. */
  dynamicConfig?: Record<string, string | number | boolean>;
  extraArgs?: readonly string[];
  readyTimeoutMs?: number;
}

export interface TemporalDevServer {
  /** host:port of the frontend gRPC service. */
  address: string;
  /** The Web UI's base URL (`http://127.0.0.1:PORT`) when started with `uiPort`. */
  uiUrl?: string;
  /** SIGTERM by default; SIGKILL simulates a crash. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Stops the server if running and starts it again on the same port and database. */
  restart(): Promise<void>;
}

/** A real Temporal dev server (the Go-built CLI), with the project's search attributes registered. */
export async function startTemporalDevServer(
  options: TemporalDevServerOptions = {},
): Promise<TemporalDevServer> {
  const binary = toolBinary('temporal');
  const port = options.port ?? (await freePort());
  const address = `127.0.0.1:${port}`;
  const dbFile = options.dbFile ?? path.join(tempDirForProcess('selfplay-temporal-'), 'temporal.db');
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--db-filename',
    dbFile,
    '--log-level',
    'warn',
    ...(options.uiPort === undefined ? ['--headless'] : ['--ui-port', String(options.uiPort)]),
    ...searchAttributeFlags(),
    ...Object.entries(options.dynamicConfig ?? {}).flatMap(([k, v]) => [
      '--dynamic-config-value',
      `${k}=${JSON.stringify(v)}`,
    ]),
    ...(options.extraArgs ?? []),
  ];
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  const uiUrl = options.uiPort === undefined ? undefined : `http://127.0.0.1:${options.uiPort}`;

  const launch = async (): Promise<ServerProcess> => {
    const server = new ServerProcess(`temporal dev server on ${address}`, binary, args);
    await server.waitUntilReady(
      async () => (await isReady(address)) && (uiUrl === undefined || (await uiAnswers(uiUrl))),
      readyTimeoutMs,
    );
    return server;
  };
  let server = await launch();
  return {
    address,
    ...(uiUrl === undefined ? {} : { uiUrl }),
    stop: (signal) => server.stop(signal),
    restart: async () => {
      await server.stop();
      server = await launch();
    },
  };
}

/** Ready means the default namespace answers and our search attributes are registered. */
async function isReady(address: string): Promise<boolean> {
  const connection = await Connection.connect({ address, connectTimeout: '2s' });
  try {
    return await connection.withDeadline(Date.now() + 3_000, async () => {
      await connection.workflowService.describeNamespace({ namespace: 'default' });
      const { customAttributes } = await connection.operatorService.listSearchAttributes({
        namespace: 'default',
      });
      return ALL_SEARCH_ATTRIBUTES.every((key) => key.name in customAttributes);
    });
  } finally {
    await connection.close();
  }
}

/** The UI starts beside the frontend, not with it: a browser test must not open it before it answers. */
async function uiAnswers(uiUrl: string): Promise<boolean> {
  const response = await fetch(uiUrl, { signal: AbortSignal.timeout(3_000) });
  await response.body?.cancel();
  return response.ok;
}
