/**
 * One contract, two stores: the local directory and S3 (a real MinIO from the global setup, or S3_ENDPOINT).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { getJson, getJsonl, putJson, putJsonl } from '../../activities/clients/storage/codec';
import {
  LocalStore,
  type ObjectStore,
  openStore,
  readObjectAtUri,
  S3Store,
  shardKey,
} from '../../activities/clients/storage';

interface Harness {
  name: string;
  open(): Promise<ObjectStore>;
  close(): Promise<void>;
}

const local = (): Harness => {
  let dir = '';
  return {
    name: 'LocalStore',
    open: async () => {
      dir = await mkdtemp(path.join(os.tmpdir(), 'selfplay-store-'));
      return new LocalStore(dir);
    },
    close: () => rm(dir, { recursive: true, force: true }),
  };
};

const s3 = (): Harness => ({
  name: 'S3Store (MinIO)',
  open: () => {
    const bucket = process.env.SELFPLAY_TEST_BUCKET;
    if (!bucket || !process.env.S3_ENDPOINT) {
      return Promise.reject(new Error('the integration global setup did not provide S3'));
    }
    // A fresh prefix per run keeps reruns against a long-lived server independent.
    return Promise.resolve(new S3Store({ bucket, prefix: `it-${randomBytes(6).toString('hex')}` }));
  },
  close: () => Promise.resolve(),
});

describe.each([local(), s3()])('$name contract', (harness) => {
  let store: ObjectStore;
  beforeAll(async () => {
    store = await harness.open();
  });
  afterAll(() => harness.close());

  test('put, get, exists and delete', async () => {
    const bytes = randomBytes(4096);
    await store.put('a/b/bytes.bin', bytes);
    await store.put('a/text.txt', 'héllo');
    expect(await store.get('a/b/bytes.bin')).toEqual(bytes);
    expect((await store.get('a/text.txt'))?.toString('utf8')).toBe('héllo');
    expect(await store.exists('a/text.txt')).toBe(true);
    await store.delete('a/text.txt');
    expect(await store.exists('a/text.txt')).toBe(false);
    expect(await store.get('a/text.txt')).toBeUndefined();
  });

  test('create writes only a new key: of concurrent creates one wins, and nothing replaces an object', async () => {
    await store.put('c/put.txt', 'put');
    expect(await store.create('c/put.txt', 'created')).toBe(false);
    expect((await store.get('c/put.txt'))?.toString()).toBe('put');
    const outcomes = await Promise.all(['a', 'b', 'c', 'd'].map((v) => store.create('c/race.txt', v)));
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    expect((await store.get('c/race.txt'))?.toString()).toBe(['a', 'b', 'c', 'd'][outcomes.indexOf(true)]);
    // Nothing of the losers is left beside it (the local store's temp files included).
    expect(await store.list('c/')).toEqual(['c/put.txt', 'c/race.txt']);
  });

  test('missing keys read as absent and delete is idempotent', async () => {
    expect(await store.get('missing/x.json')).toBeUndefined();
    expect(await store.exists('missing/x.json')).toBe(false);
    expect(await store.list('missing/')).toEqual([]);
    await expect(store.delete('missing/x.json')).resolves.toBeUndefined();
    // A "directory" is not an object.
    await store.put('dir/inner.txt', 'x');
    expect(await store.get('dir')).toBeUndefined();
    expect(await store.exists('dir')).toBe(false);
  });

  test('list is recursive, sorted and matches partial prefixes', async () => {
    const keys = [
      'l/r1/iter-000002/m.json',
      'l/r1/iter-000001/s/shard-0001.jsonl.gz',
      'l/r1/latest.json',
      'l/r2/x',
    ];
    for (const key of keys) await store.put(key, key);
    expect(await store.list('l/r1/')).toEqual([
      'l/r1/iter-000001/s/shard-0001.jsonl.gz',
      'l/r1/iter-000002/m.json',
      'l/r1/latest.json',
    ]);
    expect(await store.list('l/r1/iter-')).toEqual([
      'l/r1/iter-000001/s/shard-0001.jsonl.gz',
      'l/r1/iter-000002/m.json',
    ]);
    expect(await store.list('l/r')).toEqual([...keys].sort());
    expect(await store.list('')).toEqual(expect.arrayContaining(keys));
  });

  test('overwrite replaces the whole object; concurrent readers never see a torn one', async () => {
    const bodies = Array.from({ length: 6 }, (_, i) => Buffer.alloc(256 * 1024, 65 + i));
    await store.put('race/obj', bodies[0] as Buffer);
    const reads: Array<Promise<Buffer | undefined>> = [];
    const writes = bodies.map(async (body) => {
      reads.push(store.get('race/obj'));
      await store.put('race/obj', body);
      reads.push(store.get('race/obj'));
    });
    await Promise.all(writes);
    for (const read of await Promise.all(reads)) {
      expect(bodies.some((body) => read?.equals(body))).toBe(true);
    }
    expect(await store.list('race/')).toEqual(['race/obj']);
    await store.put('race/obj', 'short');
    expect((await store.get('race/obj'))?.toString()).toBe('short');
  });

  test('keys that could escape the root are rejected', async () => {
    for (const key of ['../outside', '/etc/passwd', 'a/../../b', 'a//b', 'a/./b', '', 'a\\b']) {
      await expect(store.put(key, 'x')).rejects.toThrow(/storage key .* is invalid/);
      await expect(store.get(key)).rejects.toThrow(/storage key .* is invalid/);
    }
    await expect(store.list('../')).rejects.toThrow(/invalid/);
  });

  test('jsonl.gz and json round trips through the codec', async () => {
    const key = shardKey('run-1', 3, 'solve', 7);
    const rows = Array.from({ length: 200 }, (_, i) => ({ i, text: `row ${i}\nwith newline`, score: i / 7 }));
    await putJsonl(store, key, rows);
    const raw = await store.get(key);
    expect(raw?.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    expect(await getJsonl(store, key)).toEqual(rows);
    await putJson(store, 'codec/m.json', { a: [1, 2], b: 'x' });
    expect(await getJson(store, 'codec/m.json')).toEqual({ a: [1, 2], b: 'x' });
    expect(await getJson(store, 'codec/none.json')).toBeUndefined();
    expect(await getJsonl(store, 'codec/none.jsonl.gz')).toBeUndefined();
  });

  test('codec errors name the object', async () => {
    await store.put('codec/bad.json', '{not json');
    await expect(getJson(store, 'codec/bad.json')).rejects.toThrow(store.uri('codec/bad.json'));
    await store.put('codec/bad.jsonl', '{"ok":1}\n{oops}\n');
    await expect(getJsonl(store, 'codec/bad.jsonl')).rejects.toThrow(/bad\.jsonl line 2 is not valid JSON/);
    await store.put('codec/bad.json.gz', 'not gzip');
    await expect(getJson(store, 'codec/bad.json.gz')).rejects.toThrow(/bad\.json\.gz is not valid gzip/);
  });

  test('ranges, streams and versions read an object piece by piece', async () => {
    const body = Buffer.from('0123456789abcdef');
    await store.put('pieces/obj', body);
    expect((await store.getRange('pieces/obj', 3, 7))?.toString()).toBe('3456');
    expect((await store.getRange('pieces/obj', 12, 40))?.toString()).toBe('cdef');
    expect((await store.getRange('pieces/obj', 16, 20))?.length).toBe(0);
    expect(await store.getRange('pieces/none', 0, 4)).toBeUndefined();
    await expect(store.getRange('pieces/obj', 5, 5)).rejects.toThrow(/byte range \[5, 5\) is invalid/);
    const chunks: Buffer[] = [];
    for await (const chunk of (await store.getStream('pieces/obj')) ?? []) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks)).toEqual(body);
    expect(await store.getStream('pieces/none')).toBeUndefined();
    const version = await store.stat('pieces/obj');
    expect(version?.size).toBe(16);
    await store.put('pieces/obj', 'rewritten, longer');
    expect(await store.stat('pieces/obj')).not.toEqual(version);
    expect(await store.stat('pieces/none')).toBeUndefined();
  });

  test('jsonl rows stream in from an async source and back out', async () => {
    async function* rows(): AsyncGenerator<{ i: number; text: string }> {
      for (let i = 0; i < 3000; i++) {
        await Promise.resolve();
        yield { i, text: `é ${'x'.repeat(i % 97)}\n` };
      }
    }
    const body = await putJsonl(store, 'codec/streamed.jsonl.gz', rows());
    expect(await store.get('codec/streamed.jsonl.gz')).toEqual(body);
    const back = await getJsonl<{ i: number; text: string }>(store, 'codec/streamed.jsonl.gz');
    expect(back?.length).toBe(3000);
    expect(back?.[2999]).toEqual({ i: 2999, text: `é ${'x'.repeat(2999 % 97)}\n` });
    await expect(putJsonl(store, 'codec/never.jsonl.gz', [{ a: 1 }, undefined])).rejects.toThrow(
      /row 1 is not JSON-serialisable/,
    );
    expect(await store.exists('codec/never.jsonl.gz')).toBe(false);
  });

  test('uri, openStore and readObjectAtUri agree', async () => {
    await store.put('uri/x.txt', 'via uri');
    const uri = store.uri('uri/x.txt');
    expect(uri.startsWith(store.root + '/')).toBe(true);
    expect((await readObjectAtUri(uri)).toString()).toBe('via uri');
    expect((await openStore(store.root).get('uri/x.txt'))?.toString()).toBe('via uri');
    await expect(readObjectAtUri(store.uri('uri/missing.txt'))).rejects.toThrow(
      `no object at ${store.uri('uri/missing.txt')}`,
    );
  });
});

describe('LocalStore specifics', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'selfplay-local-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  test('uses file URIs, plain paths and leaves no temp files; a crashed write is invisible', async () => {
    const store = openStore(dir);
    expect(store.root).toBe(`file://${dir}`);
    await store.put('k/v.json', '{}');
    expect(store.uri('k/v.json')).toBe(`file://${dir}/k/v.json`);
    expect(await readdir(path.join(dir, 'k'))).toEqual(['v.json']);
    await writeFile(path.join(dir, 'k', '.put-0123456789abcdef-v.json'), 'half a write');
    expect(await store.list('k/')).toEqual(['k/v.json']);
    expect((await readObjectAtUri(path.join(dir, 'k/v.json'))).toString()).toBe('{}');
  });

  test('rejects unsupported URI schemes', () => {
    expect(() => openStore('gs://bucket/x')).toThrow(/unsupported storage URI gs:\/\/bucket\/x/);
  });
});

describe('S3Store specifics', () => {
  test('lists past one page and builds s3 URIs', async () => {
    const bucket = process.env.SELFPLAY_TEST_BUCKET as string;
    const prefix = `it-page-${randomBytes(6).toString('hex')}`;
    const store = openStore(`s3://${bucket}/${prefix}`);
    expect(store.uri('a/b.json')).toBe(`s3://${bucket}/${prefix}/a/b.json`);
    const keys = Array.from({ length: 1050 }, (_, i) => `p/${String(i).padStart(5, '0')}`);
    for (let i = 0; i < keys.length; i += 50) {
      await Promise.all(keys.slice(i, i + 50).map((key) => store.put(key, key)));
    }
    expect(await store.list('p/')).toEqual(keys);
  });

  test('a missing bucket is an error, not an absent object', async () => {
    const store = new S3Store({ bucket: `no-such-bucket-${randomBytes(4).toString('hex')}` });
    await expect(store.get('x')).rejects.toThrow(/NoSuchBucket|does not exist/);
    await expect(store.put('x', 'y')).rejects.toThrow(/create bucket/);
  });
});
