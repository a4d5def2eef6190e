import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { LocalStore } from '../../activities/clients/storage';
import { getJson, getJsonl } from '../../activities/clients/storage/codec';
import { TrainerClient } from '../../activities/clients/trainer';
import { classifyFailure, isNonRetryable } from '../../activities/lib/errors';
import { heartbeatWhile } from '../../activities/lib/heartbeat';
import { failureEdge, nextStreak, stuckAfterMs, type FailedBeat } from '../../activities/lib/stuck';

const failureOf = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => {
      throw new Error('expected a failure');
    },
    (err: unknown) => err,
  );

describe('failures classified at the activity edge', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'failure-edge-'));
  const store = new LocalStore(dir);

  test('a stored object that does not decode is CorruptData, non-retryable, naming the object', async () => {
    const full = gzipSync(Buffer.from('{"a":1}\n{"a":2}\n'));
    writeFileSync(path.join(dir, 'truncated.jsonl.gz'), full.subarray(0, full.length - 6));
    writeFileSync(path.join(dir, 'plain.json.gz'), '{"not":"gzip"}');
    writeFileSync(path.join(dir, 'half.json'), '{"a":');
    writeFileSync(path.join(dir, 'rows.jsonl'), '{"a":1}\n{oops\n');
    for (const [read, says] of [
      [() => getJsonl(store, 'truncated.jsonl.gz'), 'truncated.jsonl.gz is not valid gzip'],
      [() => getJson(store, 'plain.json.gz'), 'plain.json.gz is not valid gzip'],
      [() => getJson(store, 'half.json'), 'half.json is not valid JSON'],
      [() => getJsonl(store, 'rows.jsonl'), 'rows.jsonl line 2 is not valid JSON'],
    ] as const) {
      const failure = classifyFailure(await failureOf(read()));
      expect(failure).toBeInstanceOf(ApplicationFailure);
      expect(failure).toMatchObject({ type: 'CorruptData', nonRetryable: true });
      expect((failure as Error).message).toContain(says);
      expect((failure as Error).message).toContain('the stored object is corrupt');
    }
  });

  test('full storage is StorageFull, non-retryable, saying what the operator does: MinIO full, ENOSPC, EDQUOT', () => {
    // What MinIO answered a put on its filled drive (a full tmpfs), as the S3 SDK raises it and S3Store wraps it.
    const minio = Object.assign(
      new Error(
        'Storage backend has reached its minimum free drive threshold. Please delete a few objects to proceed.',
      ),
      { name: 'XMinioStorageFull', Code: 'XMinioStorageFull', $metadata: { httpStatusCode: 507 } },
    );
    for (const err of [
      new Error('S3 PutObject "runs/r/manifest.json" failed: XMinioStorageFull', { cause: minio }),
      new Error('local store: cannot write "k"', {
        cause: Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }),
      }),
      Object.assign(new Error('EDQUOT: disk quota exceeded, write'), { code: 'EDQUOT' }),
    ]) {
      const failure = classifyFailure(err);
      expect(failure).toMatchObject({ type: 'StorageFull', nonRetryable: true });
      expect((failure as Error).message).toBe(
        `storage full: free space or raise the retention, then \`selfplay retry RUN\` (${err.message})`,
      );
    }
  });

  test("the code's own TypeError or RangeError is a ProgrammingError; a network failure stays transient", () => {
    let bug: unknown;
    try {
      const stored = JSON.parse('{"artifacts":null}') as { artifacts: string[] };
      stored.artifacts.map((a) => a);
    } catch (err) {
      bug = err;
    }
    const failure = classifyFailure(new Error('commit failed', { cause: bug }));
    expect(failure).toMatchObject({ type: 'ProgrammingError', nonRetryable: true });
    expect((failure as Error).message).toMatch(
      /^TypeError: Cannot read properties of null \(reading 'map'\) \(at /,
    );
    expect(classifyFailure(new RangeError('Invalid array length'))).toMatchObject({
      type: 'ProgrammingError',
    });

    // fetch's TypeError carries the network error as its cause: an outage, retried.
    const refused = new TypeError('fetch failed', {
      cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }),
    });
    expect(classifyFailure(refused)).toBe(refused);
    const memory = new RangeError('Array buffer allocation failed');
    expect(classifyFailure(memory)).toBe(memory);
    const outage = new Error('storage down');
    expect(classifyFailure(outage)).toBe(outage);
    const classified = ApplicationFailure.nonRetryable('x', 'UnknownModel');
    expect(classifyFailure(classified)).toBe(classified);
  });
});

describe('trainer client', () => {
  let server: ReturnType<typeof createServer>;
  let url: string;
  let handle: (req: IncomingMessage, res: ServerResponse) => void;
  beforeAll(async () => {
    server = createServer((req, res) => handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test.each([
    [
      422,
      'corrupt_object',
      's3://b/ckpt/optimizer.pt is corrupt',
      'CorruptData',
      /corrupt_object: s3:\/\/b\/ckpt\/optimizer.pt is corrupt/,
    ],
    [
      507,
      'storage_full',
      'storage full: OSError: [Errno 28]',
      'StorageFull',
      /^storage full: free space or raise the retention, then `selfplay retry RUN` \(trainer .*storage_full: storage full: OSError/,
    ],
  ])("the kernel's %i %s is %s, not retried", async (status, kind, message, type, says) => {
    let requests = 0;
    handle = (_req, res) => {
      requests++;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { type: kind, message } }));
    };
    const client = new TrainerClient(url, { timeoutMs: 60_000, maxRetries: 3 });
    const err = await failureOf(client.checkpoint('pol', { uri: 's3://b/ckpt', version: 1 }));
    expect(err).toMatchObject({ type, nonRetryable: true });
    expect((err as Error).message).toMatch(says);
    expect(requests).toBe(1);
  });

  test('a control route has its own short deadline, and missing it names the route and the deadline', async () => {
    // A kernel that takes the request and never answers it, as one whose thread pool is taken by sampling did.
    handle = () => undefined;
    const client = new TrainerClient(url, { timeoutMs: 3_600_000, controlTimeoutMs: 200, maxRetries: 0 });
    const err = await failureOf(client.policyState('pol'));
    expect(isNonRetryable(err)).toBe(false);
    expect((err as Error).message).toBe(
      `trainer ${url}/v1/policies/pol: GET /v1/policies/pol did not answer within its deadline of 0.2 s; a ` +
        'kernel that holds a step past its deadline is restarted by its supervisor (GET /health/live) ' +
        '(gave up after 1 attempts)',
    );
  });
});

describe('an activity failing without progress', () => {
  const beat = (since: number, attempts: number, progress: unknown): FailedBeat => ({
    progress,
    failing: { since, attempts },
  });

  test('the streak goes on while the progress stays where it failed before, and starts again when it moved', () => {
    expect(nextStreak(undefined, { done: 2 }, 1_000)).toEqual({ since: 1_000, attempts: 1 });
    expect(nextStreak(beat(1_000, 3, { done: 2 }), { done: 2 }, 9_000)).toEqual({
      since: 1_000,
      attempts: 4,
    });
    expect(nextStreak(beat(1_000, 3, { done: 2 }), { done: 3 }, 9_000)).toEqual({
      since: 9_000,
      attempts: 1,
    });
    // The last beat of an attempt whose worker died (plain progress, no streak): a new streak.
    expect(nextStreak({ done: 2 }, { done: 2 }, 9_000)).toEqual({ since: 9_000, attempts: 1 });
  });

  test('the limit comes from the run config the input carries, else the default (30 minutes)', () => {
    expect(stuckAfterMs([{ config: { timeouts: { stuckAfterMinutes: 0.5 } } }])).toBe(30_000);
    expect(stuckAfterMs([{ runId: 'r' }])).toBe(30 * 60_000);
    expect(stuckAfterMs([])).toBe(30 * 60_000);
  });

  const attempt = (
    previous: unknown,
    stuckAfterMinutes: number,
    report: Parameters<typeof heartbeatWhile>[0] = () => ({ rowsTrained: 0 }),
  ) => {
    const env = new MockActivityEnvironment(
      { activityType: 'update', heartbeatTimeoutMs: 60_000, heartbeatDetails: previous },
      { interceptors: [failureEdge] },
    );
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    const run = env.run(
      async (_input: unknown) =>
        heartbeatWhile(report, () =>
          Promise.reject(new Error('trainer http://k/v1/train/step: HTTP 500: internal: CUDA error')),
        ),
      { config: { timeouts: { stuckAfterMinutes } } },
    );
    return { failure: failureOf(run), beats };
  };

  test('a transient failure hands its streak to the next attempt in its last heartbeat', async () => {
    const since = Date.now() - 60_000;
    const { failure, beats } = attempt(beat(since, 4, { rowsTrained: 0 }), 30);
    const err = await failure;
    expect(isNonRetryable(err)).toBe(false);
    expect(beats.at(-1)).toEqual({ progress: { rowsTrained: 0 }, failing: { since, attempts: 5 } });
  });

  test('what an attempt does now (rows the kernel trained) is shown in its beats, never compared', async () => {
    const since = Date.now() - 60_000;
    const { failure, beats } = attempt(beat(since, 2, { waiting: 'train_step' }), 30, {
      progress: () => ({ waiting: 'train_step' }),
      // The failed step is rolled back whole: the rows it got through are no progress a retry keeps.
      live: () => ({ rowsTrained: 37 }),
    });
    await failure;
    expect(beats.at(-1)).toEqual({ progress: { waiting: 'train_step' }, failing: { since, attempts: 3 } });
  });

  test('past stuckAfterMinutes the failure is StuckActivity, non-retryable, naming the last failure', async () => {
    const since = Date.now() - 31 * 60_000;
    const { failure } = attempt(beat(since, 24, { rowsTrained: 0 }), 30);
    const err = await failure;
    expect(err).toMatchObject({ type: 'StuckActivity', nonRetryable: true });
    expect((err as Error).message).toMatch(
      /^update has failed for 31(\.\d+)? min without progress, 25 attempts \(timeouts\.stuckAfterMinutes 30 min\); last failure: trainer http:\/\/k\/v1\/train\/step: HTTP 500: internal: CUDA error$/,
    );
  });
});
