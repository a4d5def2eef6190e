import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { LocalStore } from '../../../activities/clients/storage';
import { syncServers, type SnapshotRef } from '../../../activities/clients/weight-sync';
import { startFakeVllm, type FakeVllm, type FakeVllmOptions } from '../../support/fake-engines/vllm';
import { configFor } from '../../support/recipe-harness';
import { startScriptedLlm } from '../../support/scripted-llm/server';
import { askReasoner, shardLlm } from '../../support/shard-llm';
import { DIGEST, FULL_FILES, LORA_FILES, POLICY, engineSuite, writeSnapshot } from './fixtures';

const options = { attempts: 2, timeoutMs: 5_000 };
const { suite, track, fileSnapshot } = engineSuite<FakeVllm>('vllm', 'lora');
const start = (options?: FakeVllmOptions): Promise<FakeVllm> => track(startFakeVllm(options));

test('loads a new suite.adapter name per version from the local path and verifies it is listed', async () => {
  const server = await start();
  const snapshot = await fileSnapshot(4);
  const results = await syncServers(suite.adapter, [server.url], snapshot, options);
  expect(results).toEqual([{ server: server.url, ok: true, version: 4 }]);
  expect(server.calls('POST', '/v1/load_lora_adapter').map((r) => r.body)).toEqual([
    { lora_name: 'solver-v4', lora_path: snapshot.dir },
  ]);
  expect(server.state.adapters.get('solver-v4')).toBe(snapshot.dir);
});

test('a server already serving the version gets no load', async () => {
  const snapshot = await fileSnapshot(4);
  const server = await start({ adapters: { 'solver-v3': '/x/v3', 'solver-v4': snapshot.dir } });
  const results = await syncServers(suite.adapter, [server.url], snapshot, options);
  expect(results).toEqual([{ server: server.url, ok: true, version: 4 }]);
  expect(server.calls('POST', '/v1/load_lora_adapter')).toHaveLength(0);
});

test('unloads every version of the policy but the new and the previous one, and nothing else', async () => {
  const server = await start({
    adapters: { 'solver-v1': '/x/v1', 'solver-v2': '/x/v2', 'solver-v3': '/x/v3', 'judge-v1': '/y/v1' },
  });
  const results = await syncServers(suite.adapter, [server.url], await fileSnapshot(4), options);
  expect(results[0]?.ok).toBe(true);
  expect(server.calls('POST', '/v1/unload_lora_adapter').map((r) => r.body)).toEqual([
    { lora_name: 'solver-v1' },
    { lora_name: 'solver-v2' },
  ]);
  expect([...server.state.adapters.keys()].sort()).toEqual(['judge-v1', 'solver-v3', 'solver-v4']);
});

test('a failed unload does not fail the sync', async () => {
  const server = await start({ adapters: { 'solver-v1': '/x/v1' } });
  server.failNext('/v1/unload_lora_adapter', 1_000, 500);
  const results = await syncServers(suite.adapter, [server.url], await fileSnapshot(4), options);
  expect(results).toEqual([{ server: server.url, ok: true, version: 4 }]);
  expect(server.state.adapters.has('solver-v1')).toBe(true);
});

test('transient 5xx answers are retried with backoff', async () => {
  const server = await start();
  server.failNext('/v1/load_lora_adapter', 2, 503);
  const results = await syncServers(suite.adapter, [server.url], await fileSnapshot(4), options);
  expect(results[0]).toMatchObject({ ok: true, version: 4 });
  expect(server.calls('POST', '/v1/load_lora_adapter')).toHaveLength(3);
});

test('a retry refused as a same-name reload counts as loaded when the suite.adapter is listed', async () => {
  const server = await start();
  server.state.lostAnswers = 1;
  const results = await syncServers(suite.adapter, [server.url], await fileSnapshot(4), options);
  expect(results[0]).toMatchObject({ ok: true, version: 4 });
  expect(server.calls('POST', '/v1/load_lora_adapter')).toHaveLength(2);
});

test('a server that stays stale is reported, the others still sync', async () => {
  const [a, stale] = [
    await start({ adapters: { 'solver-v3': '/x' } }),
    await start({ adapters: { 'solver-v3': '/x' } }),
  ];
  stale.state.staleAfterLoad = true;
  const results = await syncServers(suite.adapter, [a.url, stale.url], await fileSnapshot(4), options);
  expect(results[0]).toMatchObject({ ok: true, version: 4 });
  expect(results[1]).toMatchObject({ ok: false, version: 3 });
  expect(results[1]?.reason).toMatch(
    /^vllm server .*: still serves version 3 after 2 load\(s\) of version 4/,
  );
});

test('a server without runtime LoRA loading is reported with the setting to fix', async () => {
  const server = await start({ runtimeLoraUpdating: false });
  const [result] = await syncServers(suite.adapter, [server.url], await fileSnapshot(4), options);
  expect(result).toMatchObject({ ok: false });
  expect(result?.version).toBeUndefined();
  expect(result?.reason).toContain('404 Not Found');
  expect(result?.reason).toContain('VLLM_ALLOW_RUNTIME_LORA_UPDATING=True');
  expect(server.calls('POST', '/v1/load_lora_adapter')).toHaveLength(1);
});

test('a hung load fails at the deadline', async () => {
  const server = await start();
  server.hang('/v1/load_lora_adapter');
  const [result] = await syncServers(suite.adapter, [server.url], await fileSnapshot(4), {
    attempts: 1,
    timeoutMs: 300,
  });
  expect(result).toMatchObject({ ok: false });
  expect(result?.reason).toMatch(/not verified at version 4 within its 300 ms deadline/);
});

test('an s3 snapshot is copied once into the cache and every server loads that copy', async () => {
  await writeSnapshot(path.join(suite.s3Root, 'bucket', 'runs', 'r1', 'solver', 'v4'), LORA_FILES);
  const snapshot: SnapshotRef = {
    policy: POLICY,
    version: 4,
    uri: 's3://bucket/runs/r1/solver/v4',
    format: 'lora',
  };
  const gets = jest.spyOn(LocalStore.prototype, 'getStream');
  const [a, b] = [await start(), await start()];
  const results = await syncServers(suite.adapter, [a.url, b.url], snapshot, options);
  expect(results.map((r) => r.ok)).toEqual([true, true]);
  const paths = [a, b].map(
    (s) => (s.calls('POST', '/v1/load_lora_adapter')[0]?.body as { lora_path: string }).lora_path,
  );
  expect(paths[0]).toBe(paths[1]);
  expect(path.relative(suite.cacheDir, paths[0] ?? '')).toMatch(/^solver\/v4\/[0-9a-f]{16}$/);
  expect((await readdir(paths[0] ?? '')).sort()).toEqual(['COMPLETE', ...Object.keys(LORA_FILES)].sort());
  expect(gets).toHaveBeenCalledTimes(Object.keys(LORA_FILES).length + 1);

  const c = await start();
  await syncServers(suite.adapter, [c.url], snapshot, options);
  expect(gets).toHaveBeenCalledTimes(Object.keys(LORA_FILES).length + 1);
});

test('an s3 snapshot without its COMPLETE marker is never loaded', async () => {
  await writeSnapshot(path.join(suite.s3Root, 'bucket', 'solver', 'v4'), LORA_FILES, { complete: false });
  const snapshot: SnapshotRef = { policy: POLICY, version: 4, uri: 's3://bucket/solver/v4', format: 'lora' };
  const server = await start();
  await expect(syncServers(suite.adapter, [server.url], snapshot, options)).rejects.toMatchObject({
    type: 'ContractViolation',
    nonRetryable: true,
    message: expect.stringContaining('has no COMPLETE marker') as unknown,
  });
  expect(server.calls('POST', '/v1/load_lora_adapter')).toHaveLength(0);
});

test('a full-model snapshot is a configuration error for vLLM runtime LoRA', async () => {
  const snapshotDir = await writeSnapshot(path.join(suite.dir, 'full'), FULL_FILES);
  const snapshot: SnapshotRef = { policy: POLICY, version: 4, uri: snapshotDir, format: 'full' };
  const server = await start();
  await expect(syncServers(suite.adapter, [server.url], snapshot, options)).rejects.toMatchObject({
    type: 'InvalidConfig',
    nonRetryable: true,
    message: expect.stringContaining('vLLM weight sync hot-loads LoRA adapters only') as unknown,
  });
  expect(server.requests).toHaveLength(0);
});

test('the fake refuses malformed and duplicate loads, as vLLM does', async () => {
  const server = await start({ adapters: { 'solver-v3': '/x' } });
  const post = (body: unknown): Promise<Response> =>
    fetch(`${server.url}/load_lora_adapter`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const snapshot = await fileSnapshot(5);
  expect((await post({ lora_name: 'solver-v5', path: snapshot.dir })).status).toBe(400);
  expect((await post({ lora_name: 'solver-v3', lora_path: snapshot.dir })).status).toBe(400);
  expect((await post({ lora_name: 'solver-v5', lora_path: path.join(suite.dir, 'nowhere') })).status).toBe(
    404,
  );
  expect([...server.state.adapters.keys()]).toEqual(['solver-v3']);
});

describe('two runs of one policy name sharing a server (a fork and its parent)', () => {
  const RUN_MODEL = '{run}/{policy}-v{version}';
  const as = (run: string) => ({ ...options, run, model: RUN_MODEL });

  test("each loads its own run's adapter per version; neither unloads or serves the other's", async () => {
    const server = await start({
      adapters: { 'parent/solver-v2': '/p/v2', 'parent/solver-v3': '/p/v3', 'solver-v1': '/legacy/v1' },
    });
    const parentV4 = await fileSnapshot(4);
    // The fork at version 3 (its fork point), then 4: the same numbers as its parent's, other weights.
    const forkV3 = await fileSnapshot(3);
    expect(await syncServers(suite.adapter, [server.url], forkV3, as('fork'))).toEqual([
      { server: server.url, ok: true, version: 3 },
    ]);
    expect(await syncServers(suite.adapter, [server.url], parentV4, as('parent'))).toEqual([
      { server: server.url, ok: true, version: 4 },
    ]);
    const forkV4 = await writeSnapshot(path.join(suite.dir, 'fork-v4'), LORA_FILES);
    const forkSnapshot: SnapshotRef = { policy: POLICY, version: 4, uri: forkV4, format: 'lora' };
    expect(await syncServers(suite.adapter, [server.url], forkSnapshot, as('fork'))).toEqual([
      { server: server.url, ok: true, version: 4 },
    ]);
    expect(server.calls('POST', '/v1/load_lora_adapter').map((r) => r.body)).toEqual([
      { lora_name: 'fork/solver-v3', lora_path: forkV3.dir },
      { lora_name: 'parent/solver-v4', lora_path: parentV4.dir },
      { lora_name: 'fork/solver-v4', lora_path: forkV4 },
    ]);
    // The parent's sync unloaded its own v2 only; the fork's unloaded nothing of the parent's.
    expect(server.calls('POST', '/v1/unload_lora_adapter').map((r) => r.body)).toEqual([
      { lora_name: 'parent/solver-v2' },
    ]);
    expect([...server.state.adapters.keys()].sort()).toEqual([
      'fork/solver-v3',
      'fork/solver-v4',
      'parent/solver-v3',
      'parent/solver-v4',
      'solver-v1',
    ]);
    expect(server.state.adapters.get('fork/solver-v4')).toBe(forkV4);
    expect(server.state.adapters.get('parent/solver-v4')).toBe(parentV4.dir);
  });

  test('a model name without {version} is refused: each version needs a name of its own', async () => {
    const server = await start();
    await expect(
      syncServers(suite.adapter, [server.url], await fileSnapshot(4), {
        ...as('run'),
        model: '{run}/{policy}',
      }),
    ).rejects.toMatchObject({
      type: 'InvalidConfig',
      nonRetryable: true,
      message: expect.stringContaining('the name must contain {version} once') as unknown,
    });
    expect(server.calls('POST', '/v1/load_lora_adapter')).toHaveLength(0);
  });
});

describe('weights published again at a version (a step applied again after a failed commit)', () => {
  const RUN_MODEL = '{run}/{policy}-v{version}';

  test('load as a new adapter named by their digest, which the samplers ask for; the old weights are unloaded', async () => {
    const llm = await startScriptedLlm();
    try {
      const server = await start({ upstream: { url: llm.url, model: 'scripted-policy' } });
      const ref: SnapshotRef = {
        policy: POLICY,
        version: 4,
        uri: 's3://bucket/runs/r1/solver/v4',
        format: 'lora',
      };
      const sync = (sha256: string) =>
        syncServers(
          suite.adapter,
          [server.url],
          { ...ref, sha256 },
          { ...options, run: 'r1', model: RUN_MODEL },
        );
      const published = path.join(suite.s3Root, 'bucket', 'runs', 'r1', 'solver', 'v4');
      await writeSnapshot(published, LORA_FILES, { sha256: DIGEST.first });
      expect(await sync(DIGEST.first)).toEqual([{ server: server.url, ok: true, version: 4 }]);
      const rewritten = { ...LORA_FILES, 'adapter_model.safetensors': 'stepped again' };
      await writeSnapshot(published, rewritten, { sha256: DIGEST.again });
      expect(await sync(DIGEST.again)).toEqual([{ server: server.url, ok: true, version: 4 }]);

      const loads = server
        .calls('POST', '/v1/load_lora_adapter')
        .map((r) => r.body as Record<string, string>);
      expect(loads.map((l) => l.lora_name)).toEqual([
        `r1/solver-v4-${'a'.repeat(12)}`,
        `r1/solver-v4-${'b'.repeat(12)}`,
      ]);
      const again = loads[1] ?? {};
      expect(await readFile(path.join(again.lora_path ?? '', 'adapter_model.safetensors'), 'utf8')).toBe(
        'stepped again',
      );
      expect(server.calls('POST', '/v1/unload_lora_adapter').map((r) => r.body)).toEqual([
        { lora_name: loads[0]?.lora_name },
      ]);

      // A shard synced to the new weights asks for their adapter, and is answered from it.
      await askReasoner(
        shardLlm(
          {
            config: configFor({
              recipe: 'spice',
              runId: 'r1',
              training: { policy: POLICY },
              inference: { default: { baseUrl: server.url, model: RUN_MODEL } },
              weightSync: { engine: 'vllm', servers: [server.url] },
            }),
            runId: 'r1',
            iteration: 5,
            shard: 0,
            versions: { [POLICY]: 4 },
            snapshots: [{ ...ref, sha256: DIGEST.again }],
          },
          'reasoner',
        ),
      );
      expect(server.state.completions).toEqual([{ model: again.lora_name, path: again.lora_path }]);
    } finally {
      await llm.close();
    }
  });
});
