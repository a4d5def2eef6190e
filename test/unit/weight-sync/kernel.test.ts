import { ApplicationFailure } from '@temporalio/common';
import { adapterFor, syncServers, type SnapshotRef } from '../../../activities/clients/weight-sync';
import { startFakeKernelSampler, type FakeKernelSampler } from '../../support/fake-engines/kernel-sampler';
import { DIGEST, FAST_HTTP } from './fixtures';

const POLICY = 'solver';
const snapshot: SnapshotRef = {
  policy: POLICY,
  version: 4,
  uri: 's3://snapshots/run-1/solver/v4',
  format: 'lora',
};
const adapter = adapterFor('kernel', { http: FAST_HTTP });
const options = { attempts: 2, timeoutMs: 5_000 };

let samplers: FakeKernelSampler[] = [];
const start = async (version?: number): Promise<FakeKernelSampler> => {
  const sampler = await startFakeKernelSampler(POLICY, version);
  samplers.push(sampler);
  return sampler;
};
afterEach(async () => {
  await Promise.all(samplers.map((s) => s.close()));
  samplers = [];
});

test('loads the snapshot URI as it is and verifies the version read back', async () => {
  const sampler = await start(3);
  const results = await syncServers(adapter, [sampler.url], snapshot, options);
  expect(results).toEqual([{ server: sampler.url, ok: true, version: 4 }]);
  expect(sampler.calls('POST', '/v1/sampler/load').map((r) => r.body)).toEqual([
    { uri: snapshot.uri, version: 4 },
  ]);
  expect(sampler.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
    'GET /v1/models',
    'POST /v1/sampler/load',
    'GET /v1/models',
  ]);
});

test('a server already at the version gets no load', async () => {
  const sampler = await start(4);
  const results = await syncServers(adapter, [sampler.url], snapshot, options);
  expect(results).toEqual([{ server: sampler.url, ok: true, version: 4 }]);
  expect(sampler.calls('POST', '/v1/sampler/load')).toHaveLength(0);
});

test('accepts a base URL without /v1 and full-model snapshots', async () => {
  const sampler = await start();
  const root = sampler.url.replace(/\/v1$/, '/');
  const results = await syncServers(adapter, [root], { ...snapshot, format: 'full' }, options);
  expect(results).toEqual([{ server: root, ok: true, version: 4 }]);
});

test('transient 5xx answers are retried with backoff', async () => {
  const sampler = await start(3);
  sampler.failNext('/v1/sampler/load', 2, 503);
  sampler.failNext('/v1/models', 1, 502);
  const [result] = await syncServers(adapter, [sampler.url], snapshot, options);
  expect(result).toMatchObject({ ok: true, version: 4 });
  expect(sampler.calls('POST', '/v1/sampler/load')).toHaveLength(3);
});

test('a server that keeps failing with 5xx is out after every attempt, with the status in the reason', async () => {
  const sampler = await start(3);
  sampler.failNext('/v1/sampler/load', 1_000, 500);
  const [result] = await syncServers(adapter, [sampler.url], snapshot, options);
  expect(result).toMatchObject({ ok: false, version: 3 });
  expect(result?.reason).toMatch(/still serves version 3 after 2 load\(s\) of version 4/);
  expect(result?.reason).toMatch(/500 injected failure \(gave up after 4 tries\)/);
  // 2 attempts x (1 try + 3 retries)
  expect(sampler.calls('POST', '/v1/sampler/load')).toHaveLength(8);
});

test('a 4xx refusal is not retried and carries the server message', async () => {
  const sampler = await start(3);
  sampler.state.refusal = { status: 409, message: 'version 4 is not published for policy solver' };
  const [result] = await syncServers(adapter, [sampler.url], snapshot, options);
  expect(result).toMatchObject({ ok: false, version: 3 });
  expect(result?.reason).toContain('refused');
  expect(result?.reason).toContain('409 version 4 is not published for policy solver');
  expect(sampler.calls('POST', '/v1/sampler/load')).toHaveLength(1);
});

test('a server that stays stale after loads is reported, the others still sync', async () => {
  const [a, stale, b] = [await start(3), await start(3), await start(3)];
  stale.state.staleAfterLoad = true;
  const results = await syncServers(adapter, [a.url, stale.url, b.url], snapshot, options);
  expect(results.map((r) => r.ok)).toEqual([true, false, true]);
  expect(results[1]).toMatchObject({ server: stale.url, version: 3 });
  expect(results[1]?.reason).toBe(
    `kernel server ${stale.url}: still serves version 3 after 2 load(s) of version 4 (${snapshot.uri}), ` +
      'each accepted by the server: check its log',
  );
  expect(stale.calls('POST', '/v1/sampler/load')).toHaveLength(2);
});

test('a hung server fails at its deadline while the others sync', async () => {
  const [hung, fine] = [await start(3), await start(3)];
  hung.hang('/v1/sampler/load');
  const started = Date.now();
  const results = await syncServers(adapter, [hung.url, fine.url], snapshot, { attempts: 2, timeoutMs: 300 });
  expect(Date.now() - started).toBeLessThan(4_000); // well before the 5 s per-try deadline
  expect(results[0]).toMatchObject({ ok: false, version: 3 });
  expect(results[0]?.reason).toMatch(/not verified at version 4 within its 300 ms deadline/);
  expect(results[1]).toMatchObject({ ok: true, version: 4 });
});

test('an unreachable server is reported with the connection error', async () => {
  const gone = await start(3);
  await gone.close();
  const [result] = await syncServers(adapter, [gone.url], snapshot, options);
  expect(result?.ok).toBe(false);
  expect(result?.version).toBeUndefined();
  expect(result?.reason).toMatch(/GET http:\/\/127\.0\.0\.1:\d+\/v1\/models: fetch failed: .*ECONNREFUSED/);
});

test("the caller's cancellation rejects the sync instead of blaming a server", async () => {
  const sampler = await start(3);
  sampler.hang('/v1/sampler/load');
  const controller = new AbortController();
  const sync = syncServers(adapter, [sampler.url], snapshot, { ...options, signal: controller.signal });
  controller.abort(new Error('activity cancelled'));
  await expect(sync).rejects.toThrow(/activity cancelled/);
});

test('the fake sampler refuses malformed loads, as the kernel does', async () => {
  const sampler = await start(3);
  const res = await fetch(`${sampler.url}/sampler/load`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ uri: snapshot.uri, version: '4' }),
  });
  expect(res.status).toBe(400);
  expect(sampler.state.version).toBe(3);
});

test('invalid sync options are a configuration error', async () => {
  const sampler = await start(3);
  const sync = syncServers(adapter, [sampler.url], snapshot, { attempts: 0, timeoutMs: 1_000 });
  await expect(sync).rejects.toBeInstanceOf(ApplicationFailure);
  await expect(sync).rejects.toMatchObject({ type: 'InvalidConfig', nonRetryable: true });
  expect(sampler.requests).toHaveLength(0);
});

test('pinned (a run that samples while it trains), the load asks for a copy of the snapshot, not the live weights', async () => {
  const sampler = await start(3);
  const pinned = adapterFor('kernel', { http: FAST_HTTP, pinKernelSnapshots: true });
  await syncServers(pinned, [sampler.url], snapshot, options);
  expect(sampler.calls('POST', '/v1/sampler/load').map((r) => r.body)).toEqual([
    { uri: snapshot.uri, version: 4, pin: true },
  ]);
});

test("pinned, a sampler serving the trainer's live weights at the wanted version is not in sync: it gets a pinned load", async () => {
  const sampler = await start(4);
  const pinned = adapterFor('kernel', { http: FAST_HTTP, pinKernelSnapshots: true });
  const [result] = await syncServers(pinned, [sampler.url], snapshot, options);
  expect(result).toMatchObject({ ok: true, version: 4 });
  expect(sampler.calls('POST', '/v1/sampler/load').map((r) => r.body)).toEqual([
    { uri: snapshot.uri, version: 4, pin: true },
  ]);
  // Pinned at that version now: the next sync loads nothing.
  await syncServers(pinned, [sampler.url], snapshot, options);
  expect(sampler.calls('POST', '/v1/sampler/load')).toHaveLength(1);
  // Unpinned (a synchronous run), live weights at the wanted version are in sync.
  const live = await start(4);
  await syncServers(adapter, [live.url], snapshot, options);
  expect(live.calls('POST', '/v1/sampler/load')).toHaveLength(0);
});

test('a pinned copy of the version with other weights (published again since) is reloaded, naming their digest', async () => {
  const sampler = await start(3);
  const pinned = adapterFor('kernel', { http: FAST_HTTP, pinKernelSnapshots: true });
  const first = { ...snapshot, sha256: DIGEST.first };
  const again = { ...snapshot, sha256: DIGEST.again };
  for (const published of [first, first, again]) {
    expect(await syncServers(pinned, [sampler.url], published, options)).toEqual([
      { server: sampler.url, ok: true, version: 4 },
    ]);
  }
  expect(sampler.calls('POST', '/v1/sampler/load').map((r) => r.body)).toEqual([
    { uri: snapshot.uri, version: 4, pin: true, sha256: DIGEST.first },
    { uri: snapshot.uri, version: 4, pin: true, sha256: DIGEST.again },
  ]);
  expect(sampler.state.digest).toBe(DIGEST.again);
});

describe('one model per sampler: two runs of one policy name cannot share it', () => {
  test("a sampler serving another run's weights is refused without a load, non-retryably", async () => {
    const sampler = await start(4);
    sampler.state.lineage = 'parent';
    // At the very version the fork wants: never mistaken for in sync.
    await expect(
      syncServers(adapter, [sampler.url], snapshot, { ...options, run: 'fork' }),
    ).rejects.toMatchObject({
      type: 'InvalidConfig',
      nonRetryable: true,
      message: expect.stringMatching(
        /kernel server .* serves run "parent"'s weights of policy "solver".*run "fork" cannot sample from it too\. Give each run its own sampler/,
      ) as unknown,
    });
    expect(sampler.calls('POST', '/v1/sampler/load')).toHaveLength(0);
    expect(sampler.state).toMatchObject({ version: 4, lineage: 'parent' });
  });

  test('the load names the run; its rollback lineage and its own weights are served as before', async () => {
    const sampler = await start(3);
    sampler.state.lineage = 'run.r1';
    expect(await syncServers(adapter, [sampler.url], snapshot, { ...options, run: 'run' })).toEqual([
      { server: sampler.url, ok: true, version: 4 },
    ]);
    expect(sampler.calls('POST', '/v1/sampler/load').map((r) => r.body)).toEqual([
      { uri: snapshot.uri, version: 4, lineage: 'run' },
    ]);
  });

  test("a load refused because another run's load came first is non-retryable, with the sampler's reason", async () => {
    const sampler = await start(3);
    // Its version read showed no one's weights; another run's load came first.
    const message = "lineage: this sampler serves run 'other''s weights";
    sampler.state.refusal = { status: 409, message, type: 'lineage_conflict' };
    await expect(
      syncServers(adapter, [sampler.url], snapshot, { ...options, run: 'run' }),
    ).rejects.toMatchObject({
      type: 'InvalidConfig',
      nonRetryable: true,
      message: expect.stringContaining("409 lineage: this sampler serves run 'other''s weights") as unknown,
    });
  });
});
