/**
 * Integration tests run against real servers: a Temporal dev server and MinIO, started here unless
 * TEMPORAL_ADDRESS / S3_ENDPOINT name running ones. Test workers inherit the connection details through
 * process.env; the handles stay in this (the runner's) process for the teardown.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { ensureSearchAttributes } from '../../infra/temporal/search-attributes';
import { ensureBucket } from '../../infra/local/create-bucket';
import { createS3Client } from '../../activities/clients/storage/s3';
import { stopServers, type StartedServers } from './global-teardown';
import { startMinio } from './minio-server';
import { startTemporalDevServer } from './temporal-server';

export default async function globalSetup(): Promise<void> {
  const tempDir = mkdtempSync(path.join(os.tmpdir(), 'selfplay-it-'));
  const started: StartedServers = { stops: [], tempDir };
  globalThis.__selfplayServers = started;
  process.env.AWS_REGION ??= 'us-east-1';
  setUpSecrets();
  const results = await Promise.allSettled([setUpTemporal(started), setUpStorage(started)]);
  setUpInputRoots();
  const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  if (failures.length > 0) {
    // Jest skips the teardown when the setup throws: clean up here.
    globalThis.__selfplayServers = undefined;
    await stopServers(started);
    throw failures[0];
  }
}

/**
 * Every kernel the tests start needs this session's token, and every client and worker encrypts payloads
 * with this session's codec key, as in production. Recording fixture histories (SELFPLAY_RECORD_HISTORIES)
 * leaves payloads in clear: a fixture must replay without the session's key.
 */
function setUpSecrets(): void {
  process.env.SELFPLAY_KERNEL_TOKEN ??= randomBytes(24).toString('hex');
  if (!process.env.SELFPLAY_RECORD_HISTORIES) {
    process.env.SELFPLAY_CODEC_KEYS ??= `it-${randomBytes(4).toString('hex')}:${randomBytes(32).toString('base64')}`;
  }
}

/**
 * The tests' inputs: the fixtures, files they write under the temporary directory, and the test bucket
 * (workers refuse any other input, config/input-roots.ts).
 */
function setUpInputRoots(): void {
  const bucket = process.env.SELFPLAY_TEST_BUCKET;
  process.env.SELFPLAY_INPUT_ROOTS ??= [
    'test/fixtures',
    os.tmpdir(),
    ...(bucket ? [`s3://${bucket}`] : []),
  ].join(',');
}

async function setUpTemporal(started: StartedServers): Promise<void> {
  const existing = process.env.TEMPORAL_ADDRESS;
  if (existing) {
    const connection = await Connection.connect({ address: existing, connectTimeout: '10s' });
    try {
      await ensureSearchAttributes(connection, process.env.TEMPORAL_NAMESPACE ?? 'default');
    } finally {
      await connection.close();
    }
    return;
  }
  const server = await startTemporalDevServer({ dbFile: path.join(started.tempDir, 'temporal.db') });
  started.stops.push(() => server.stop());
  process.env.TEMPORAL_ADDRESS = server.address;
}

async function setUpStorage(started: StartedServers): Promise<void> {
  const existing = process.env.S3_ENDPOINT;
  if (existing) {
    const bucket = (process.env.SELFPLAY_TEST_BUCKET ??= 'selfplay-test');
    const client = createS3Client({ endpoint: existing, region: process.env.AWS_REGION, maxAttempts: 3 });
    try {
      await ensureBucket(client, bucket);
    } finally {
      client.destroy();
    }
    return;
  }
  const minio = await startMinio({ dataDir: path.join(started.tempDir, 'minio') });
  started.stops.push(() => minio.stop());
  Object.assign(process.env, {
    S3_ENDPOINT: minio.endpoint,
    SELFPLAY_TEST_BUCKET: minio.bucket,
    AWS_ACCESS_KEY_ID: minio.accessKey,
    AWS_SECRET_ACCESS_KEY: minio.secretKey,
  });
}
