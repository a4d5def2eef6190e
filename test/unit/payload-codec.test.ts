import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import {
  AesGcmCodec,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA,
  codecKeysFromEnv,
  type CodecKey,
} from '../../config/payload-codec';
import { startCodecServer, type RunningCodecServer } from '../../cli/codec-server';

const key = (id: string): CodecKey => ({ id, key: randomBytes(32) });
const SECRET = { config: 'run-secret-42', apiKeyEnv: 'SELFPLAY_X_TOKEN' };
const payload = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString();
const errorOf = async (work: Promise<unknown>): Promise<string> =>
  work.then(
    () => 'no error',
    (err: unknown) => (err as Error).message,
  );

describe('AES-GCM payload codec', () => {
  test('round trip: ciphertext labelled with the key id, the original back', async () => {
    const codec = new AesGcmCodec([key('k1')]);
    const plain = [payload(SECRET), payload(null), payload('x'.repeat(10_000))];
    const sealed = await codec.encode(plain);
    for (const p of sealed) {
      expect(text(p.metadata?.encoding)).toBe(ENCRYPTED_ENCODING);
      expect(text(p.metadata?.[KEY_ID_METADATA])).toBe('k1');
      expect(text(p.data)).not.toContain('run-secret-42');
    }
    // A fresh IV each time: the same value never encrypts the same way twice.
    expect(text((await codec.encode([plain[0]!]))[0]!.data)).not.toBe(text(sealed[0]!.data));
    const opened = await codec.decode(sealed);
    expect(opened.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual([
      SECRET,
      null,
      'x'.repeat(10_000),
    ]);
    // Payloads stored before the codec (histories recorded in clear) decode as they are.
    expect(await codec.decode([plain[0]!])).toEqual([plain[0]]);
  });

  test('rotation: the first key encrypts, every listed key decrypts, a dropped key is named', async () => {
    const [old, next] = [key('2024'), key('2025')];
    const before = await new AesGcmCodec([old]).encode([payload(SECRET)]);
    const rotated = new AesGcmCodec([next, old]);
    expect(defaultPayloadConverter.fromPayload((await rotated.decode(before))[0]!)).toEqual(SECRET);
    const after = await rotated.encode([payload(SECRET)]);
    expect(text(after[0]!.metadata?.[KEY_ID_METADATA])).toBe('2025');
    const onlyNew = new AesGcmCodec([next]);
    expect(defaultPayloadConverter.fromPayload((await onlyNew.decode(after))[0]!)).toEqual(SECRET);
    expect(await errorOf(onlyNew.decode(before))).toBe(
      'a payload is encrypted with key "2024", which SELFPLAY_CODEC_KEYS does not hold (it holds 2025): add that key to decrypt it',
    );
  });

  test('tampering is detected: a changed byte, a relabelled key id, a truncated payload', async () => {
    const [a, b] = [key('a'), key('b')];
    const codec = new AesGcmCodec([a, b]);
    const [sealed] = await codec.encode([payload(SECRET)]);
    const flipped = Buffer.from(sealed!.data!);
    flipped[20] = flipped[20]! ^ 1;
    expect(await errorOf(codec.decode([{ ...sealed, data: flipped }]))).toBe(
      'an encrypted payload (key a) failed authentication: it was altered, or key a is not the key it was encrypted with',
    );
    const relabelled = { ...sealed, metadata: { ...sealed!.metadata, [KEY_ID_METADATA]: Buffer.from('b') } };
    expect(await errorOf(codec.decode([relabelled]))).toContain('(key b) failed authentication');
    const truncated = { ...sealed, data: Buffer.from(sealed!.data!).subarray(0, 10) };
    expect(await errorOf(codec.decode([truncated]))).toBe(
      'an encrypted payload (key a) is 10 bytes: too short to be one',
    );
  });

  test('keys from SELFPLAY_CODEC_KEYS, with clear errors', () => {
    const k = randomBytes(32).toString('base64');
    expect(codecKeysFromEnv({})).toBeUndefined();
    expect(codecKeysFromEnv({ SELFPLAY_CODEC_KEYS: `new:${k}, old:${k}` })?.map((c) => c.id)).toEqual([
      'new',
      'old',
    ]);
    expect(() =>
      codecKeysFromEnv({ SELFPLAY_CODEC_KEYS: `k1:${randomBytes(16).toString('base64')}` }),
    ).toThrow(
      'SELFPLAY_CODEC_KEYS entry 1 (k1): the key is 16 bytes, AES-256 needs 32 (openssl rand -base64 32)',
    );
    expect(() => codecKeysFromEnv({ SELFPLAY_CODEC_KEYS: k })).toThrow(
      "SELFPLAY_CODEC_KEYS entry 1: expected id:base64key with an id of letters, digits, '.', '_' or '-'",
    );
    expect(() => codecKeysFromEnv({ SELFPLAY_CODEC_KEYS: `a:${k},a:${k}` })).toThrow(
      'key id a is listed twice',
    );
  });
});

describe('codec server', () => {
  const UI = 'http://localhost:8233';
  const codec = new AesGcmCodec([key('k1')]);
  let server: RunningCodecServer;
  beforeAll(async () => {
    server = await startCodecServer({ codec, host: '127.0.0.1', port: 0, origins: [UI] });
  });
  afterAll(() => server.close());

  const post = (path: string, body: unknown, origin = UI) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin, 'x-namespace': 'default' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const asJson = (p: Payload) => ({
    metadata: Object.fromEntries(
      Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    ),
    data: Buffer.from(p.data ?? []).toString('base64'),
  });

  test('/encode then /decode gives the payloads back; the Web UI origin may call it', async () => {
    const plain = asJson(payload(SECRET));
    const encoded = await post('/encode', { payloads: [plain] });
    expect(encoded.status).toBe(200);
    expect(encoded.headers.get('access-control-allow-origin')).toBe(UI);
    const sealed = ((await encoded.json()) as { payloads: Array<typeof plain> }).payloads;
    expect(Buffer.from(sealed[0]!.metadata.encoding!, 'base64').toString()).toBe(ENCRYPTED_ENCODING);
    expect(Buffer.from(sealed[0]!.data, 'base64').toString()).not.toContain('run-secret-42');
    const decoded = await post('/decode', { payloads: sealed });
    expect(await decoded.json()).toEqual({ payloads: [plain] });
    // What the SDK's own codec wrote, the server reads.
    const fromSdk = (await codec.encode([payload(SECRET)])).map(asJson);
    expect(await (await post('/decode', { payloads: fromSdk })).json()).toEqual({ payloads: [plain] });
  });

  test('CORS preflight: allowed for the UI origin only', async () => {
    const preflight = (origin: string) =>
      fetch(`${server.url}/decode`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,x-namespace',
        },
      });
    const ok = await preflight(UI);
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe(UI);
    expect(ok.headers.get('access-control-allow-headers')).toContain('x-namespace');
    const other = await preflight('https://evil.example');
    expect(other.status).toBe(403);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    expect(
      (await post('/decode', { payloads: [] }, 'https://evil.example')).headers.get(
        'access-control-allow-origin',
      ),
    ).toBeNull();
  });

  test('bad requests get 400 or 404 with the reason', async () => {
    expect(await (await post('/decode', 'not json')).json()).toEqual({
      error: 'the body is not JSON; expected {"payloads": [...]}',
    });
    expect((await post('/decode', { nope: 1 })).status).toBe(400);
    const [sealed] = (await codec.encode([payload(SECRET)])).map(asJson);
    const tampered = { ...sealed!, data: Buffer.from('x'.repeat(40)).toString('base64') };
    const refused = await post('/decode', { payloads: [tampered] });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toContain('failed authentication');
    const missing = await fetch(`${server.url}/other`);
    expect(missing.status).toBe(404);
  });
});
