import path from 'node:path';
import { LocalStore } from '../../../activities/clients/storage';
import { syncServers, type SnapshotRef } from '../../../activities/clients/weight-sync';
import { startFakeSglang, type FakeSglang } from '../../support/fake-engines/sglang';
import { DIGEST, FULL_FILES, LORA_FILES, POLICY, engineSuite, writeSnapshot } from './fixtures';

const options = { attempts: 2, timeoutMs: 5_000 };
const { suite, track, fileSnapshot } = engineSuite<FakeSglang>('sglang', 'full');
const start = (weightVersion?: string): Promise<FakeSglang> => track(startFakeSglang(weightVersion));

test('reloads from the local path with the version as a string, and verifies it read back', async () => {
  const server = await start('3');
  const snapshot = await fileSnapshot(4);
  const results = await syncServers(suite.adapter, [server.url], snapshot, options);
  expect(results).toEqual([{ server: server.url, ok: true, version: 4 }]);
  expect(server.calls('POST', '/update_weights_from_disk').map((r) => r.body)).toEqual([
    { model_path: snapshot.dir, weight_version: '4', flush_cache: true, abort_all_requests: false },
  ]);
  expect(server.state).toMatchObject({ weightVersion: '4', modelPath: snapshot.dir });
  expect(server.calls('GET', '/get_weight_version')).toHaveLength(2);
});

test('weights published again at the version are loaded again, tagged with their digest', async () => {
  const server = await start('r1@3');
  const dir = path.join(suite.dir, 'published', 'v4');
  const ref: SnapshotRef = { policy: POLICY, version: 4, uri: dir, format: 'full' };
  const sync = (sha256: string) =>
    syncServers(suite.adapter, [server.url], { ...ref, sha256 }, { ...options, run: 'r1' });
  await writeSnapshot(dir, FULL_FILES, { sha256: DIGEST.first });
  expect(await sync(DIGEST.first)).toEqual([{ server: server.url, ok: true, version: 4 }]);
  expect(await sync(DIGEST.first)).toEqual([{ server: server.url, ok: true, version: 4 }]);
  await writeSnapshot(
    dir,
    { ...FULL_FILES, 'model-00001-of-00002.safetensors': 'stepped again' },
    { sha256: DIGEST.again },
  );
  expect(await sync(DIGEST.again)).toEqual([{ server: server.url, ok: true, version: 4 }]);
  expect(
    server
      .calls('POST', '/update_weights_from_disk')
      .map((r) => (r.body as { weight_version: string }).weight_version),
  ).toEqual([`r1@4-${'a'.repeat(12)}`, `r1@4-${'b'.repeat(12)}`]);
});

test('a fresh server ("default" version) is loaded', async () => {
  const server = await start();
  const results = await syncServers(suite.adapter, [server.url], await fileSnapshot(0), options);
  expect(results).toEqual([{ server: server.url, ok: true, version: 0 }]);
  expect(server.calls('POST', '/update_weights_from_disk')).toHaveLength(1);
});

test('a server already at the version gets no load', async () => {
  const server = await start('4');
  const results = await syncServers(suite.adapter, [server.url], await fileSnapshot(4), options);
  expect(results).toEqual([{ server: server.url, ok: true, version: 4 }]);
  expect(server.calls('POST', '/update_weights_from_disk')).toHaveLength(0);
});

test('transient 5xx answers are retried with backoff', async () => {
  const server = await start('3');
  server.failNext('/update_weights_from_disk', 2, 502);
  const results = await syncServers(suite.adapter, [server.url], await fileSnapshot(4), options);
  expect(results[0]).toMatchObject({ ok: true, version: 4 });
  expect(server.calls('POST', '/update_weights_from_disk')).toHaveLength(3);
});

test('success: false fails the server with SGLang message, without retrying', async () => {
  const server = await start('3');
  server.state.failure = 'Failed to update weights: shape mismatch for lm_head.weight';
  const [result] = await syncServers(suite.adapter, [server.url], await fileSnapshot(4), options);
  expect(result).toMatchObject({ ok: false, version: 3 });
  expect(result?.reason).toContain('refused');
  expect(result?.reason).toContain('400 Failed to update weights: shape mismatch for lm_head.weight');
  expect(server.calls('POST', '/update_weights_from_disk')).toHaveLength(1);
});

test('a server that stays stale is reported, the others still sync', async () => {
  const [a, stale, b] = [await start('3'), await start('3'), await start('3')];
  stale.state.staleAfterLoad = true;
  const results = await syncServers(suite.adapter, [a.url, stale.url, b.url], await fileSnapshot(4), options);
  expect(results.map((r) => r.ok)).toEqual([true, false, true]);
  expect(results[1]?.reason).toMatch(
    /^sglang server .*: still serves version 3 after 2 load\(s\) of version 4/,
  );
  expect(stale.calls('POST', '/update_weights_from_disk')).toHaveLength(2);
});

test('a hung version read fails at the deadline', async () => {
  const server = await start('3');
  server.hang('/get_weight_version');
  const [result] = await syncServers(suite.adapter, [server.url], await fileSnapshot(4), {
    attempts: 2,
    timeoutMs: 300,
  });
  expect(result).toMatchObject({ ok: false });
  expect(result?.reason).toMatch(/not verified at version 4 within its 300 ms deadline/);
  expect(server.calls('POST', '/update_weights_from_disk')).toHaveLength(0);
});

test('an s3 snapshot is copied once and loaded by every server from the cache', async () => {
  await writeSnapshot(path.join(suite.s3Root, 'bucket', 'solver', 'v4'), FULL_FILES);
  const snapshot: SnapshotRef = { policy: POLICY, version: 4, uri: 's3://bucket/solver/v4', format: 'full' };
  const gets = jest.spyOn(LocalStore.prototype, 'getStream');
  const [a, b] = [await start('3'), await start('3')];
  const results = await syncServers(suite.adapter, [a.url, b.url], snapshot, options);
  expect(results.map((r) => r.ok)).toEqual([true, true]);
  expect(a.state.modelPath).toBe(b.state.modelPath);
  expect(path.relative(suite.cacheDir, a.state.modelPath)).toMatch(/^solver\/v4\/[0-9a-f]{16}$/);
  expect(gets).toHaveBeenCalledTimes(Object.keys(FULL_FILES).length + 1);
});

test('a LoRA snapshot is a configuration error for SGLang disk reloads', async () => {
  const snapshotDir = await writeSnapshot(path.join(suite.dir, 'lora'), LORA_FILES);
  const snapshot: SnapshotRef = { policy: POLICY, version: 4, uri: snapshotDir, format: 'lora' };
  const server = await start('3');
  await expect(syncServers(suite.adapter, [server.url], snapshot, options)).rejects.toMatchObject({
    type: 'InvalidConfig',
    nonRetryable: true,
    message: expect.stringContaining('SGLang weight sync reloads full models from disk') as unknown,
  });
  expect(server.requests).toHaveLength(0);
});

test('the fake refuses a numeric weight_version and unknown fields, as SGLang does', async () => {
  const server = await start('3');
  const snapshot = await fileSnapshot(4);
  const post = (body: unknown): Promise<Response> =>
    fetch(`${server.url.replace(/\/v1$/, '')}/update_weights_from_disk`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  expect((await post({ model_path: snapshot.dir, weight_version: 4 })).status).toBe(400);
  expect((await post({ model_path: snapshot.dir, version: '4' })).status).toBe(400);
  expect(server.state.weightVersion).toBe('3');
});

describe('one model per server: two runs of one policy name cannot share it', () => {
  test('the load tags the weights with the run; a rollback lineage of the run is the run', async () => {
    const server = await start('run.r1@3');
    const snapshot = await fileSnapshot(4);
    expect(await syncServers(suite.adapter, [server.url], snapshot, { ...options, run: 'run' })).toEqual([
      { server: server.url, ok: true, version: 4 },
    ]);
    expect(server.state.weightVersion).toBe('run@4');
  });

  test("a server holding another run's weights is refused without a load, non-retryably", async () => {
    const server = await start('parent@4');
    await expect(
      syncServers(suite.adapter, [server.url], await fileSnapshot(4), { ...options, run: 'fork' }),
    ).rejects.toMatchObject({
      type: 'InvalidConfig',
      nonRetryable: true,
      message: expect.stringContaining(
        `sglang server ${server.url} serves run "parent"'s weights`,
      ) as unknown,
    });
    expect(server.calls('POST', '/update_weights_from_disk')).toHaveLength(0);
  });
});
