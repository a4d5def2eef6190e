import { randomBytes } from 'node:crypto';
import { S3Client } from '@aws-sdk/client-s3';
import { ensureBucket } from '../../infra/local/create-bucket';
import { freePort } from './free-port';
import { ServerProcess, tempDirForProcess, toolBinary } from './process';

export interface MinioOptions {
  /** Where objects live; by default a temp dir, so `restart()` keeps them. */
  dataDir?: string;
  port?: number;
  bucket?: string;
  /** Root credentials; by default throwaway ones (a test reusing the environment's passes those). */
  credentials?: { accessKey: string; secretKey: string };
  readyTimeoutMs?: number;
}

export interface MinioServer {
  /** http://127.0.0.1:port, the value for S3_ENDPOINT. */
  endpoint: string;
  bucket: string;
  accessKey: string;
  secretKey: string;
  stop(signal?: NodeJS.Signals): Promise<void>;
  restart(): Promise<void>;
}

/** A real S3-compatible server (MinIO, Go-built) with one bucket, on free ports and throwaway credentials. */
export async function startMinio(options: MinioOptions = {}): Promise<MinioServer> {
  const binary = toolBinary('minio');
  const [port, consolePort] = [options.port ?? (await freePort()), await freePort()];
  const endpoint = `http://127.0.0.1:${port}`;
  const dataDir = options.dataDir ?? tempDirForProcess('selfplay-minio-');
  const bucket = options.bucket ?? 'selfplay-test';
  const { accessKey, secretKey } = options.credentials ?? {
    accessKey: 'selfplay-test',
    secretKey: randomBytes(16).toString('hex'),
  };
  const args = [
    'server',
    dataDir,
    '--address',
    `127.0.0.1:${port}`,
    '--console-address',
    `127.0.0.1:${consolePort}`,
  ];
  const env = {
    ...process.env,
    MINIO_ROOT_USER: accessKey,
    MINIO_ROOT_PASSWORD: secretKey,
    MINIO_BROWSER: 'off',
    MINIO_UPDATE: 'off',
  };
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;

  const launch = async (): Promise<ServerProcess> => {
    const server = new ServerProcess(`minio on ${endpoint}`, binary, args, env);
    await server.waitUntilReady(
      async () => (await fetch(`${endpoint}/minio/health/live`, { signal: AbortSignal.timeout(2_000) })).ok,
      readyTimeoutMs,
    );
    return server;
  };
  let server = await launch();

  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: accessKey, secretAccessKey: secretKey },
  });
  try {
    await ensureBucket(client, bucket);
  } finally {
    client.destroy();
  }

  return {
    endpoint,
    bucket,
    accessKey,
    secretKey,
    stop: (signal) => server.stop(signal),
    restart: async () => {
      await server.stop();
      server = await launch();
    },
  };
}
