import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

/**
 * Encryption of every payload this project stores in Temporal (run configs, results, metrics, keys):
 * AES-256-GCM, the key from the environment, the key's id in the payload's metadata so keys rotate.
 *
 *   SELFPLAY_CODEC_KEYS   `id:base64key[,id:base64key…]`, each key 32 bytes (`openssl rand -base64 32`).
 *                         The FIRST key encrypts; every listed key decrypts. To rotate, put the new key first
 *                         and keep the old ones until no history that needs them is kept any more.
 *
 * Unset: payloads are stored in clear (a local run). Payloads that were never encrypted (histories from before
 * the codec) decode as they are. Search attributes and failure messages are not payloads and stay readable:
 * the project keeps secrets out of both.
 */
export const CODEC_KEYS_ENV = 'SELFPLAY_CODEC_KEYS';
export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';
const CIPHER = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;

export interface CodecKey {
  id: string;
  key: Buffer;
}

/** The keys of `SELFPLAY_CODEC_KEYS` (first encrypts); undefined when unset. Bad entries throw, naming the entry. */
export function codecKeysFromEnv(env: NodeJS.ProcessEnv = process.env): CodecKey[] | undefined {
  const spec = env[CODEC_KEYS_ENV]?.trim();
  if (!spec) return undefined;
  const keys = spec.split(',').map((entry, i) => {
    const at = `${CODEC_KEYS_ENV} entry ${i + 1}`;
    const colon = entry.indexOf(':');
    const id = entry.slice(0, colon).trim();
    if (colon < 0 || !KEY_ID.test(id)) {
      throw new Error(`${at}: expected id:base64key with an id of letters, digits, '.', '_' or '-'`);
    }
    const key = Buffer.from(entry.slice(colon + 1).trim(), 'base64');
    if (key.length !== 32) {
      throw new Error(
        `${at} (${id}): the key is ${key.length} bytes, AES-256 needs 32 (openssl rand -base64 32)`,
      );
    }
    return { id, key };
  });
  const ids = keys.map((k) => k.id);
  const twice = ids.find((id, i) => ids.indexOf(id) !== i);
  if (twice) throw new Error(`${CODEC_KEYS_ENV}: key id ${twice} is listed twice`);
  return keys;
}

export class AesGcmCodec implements PayloadCodec {
  private readonly byId: Map<string, Buffer>;

  constructor(private readonly keys: readonly CodecKey[]) {
    if (keys.length === 0) throw new Error('AesGcmCodec needs at least one key');
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  encode(payloads: Payload[]): Promise<Payload[]> {
    const { id, key } = this.keys[0]!;
    return Promise.resolve(
      payloads.map((payload) => {
        const plain = temporal.api.common.v1.Payload.encode(payload).finish();
        const iv = randomBytes(IV_BYTES);
        const cipher = createCipheriv(CIPHER, key, iv).setAAD(associatedData(id));
        const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
        return {
          metadata: {
            encoding: Buffer.from(ENCRYPTED_ENCODING),
            [KEY_ID_METADATA]: Buffer.from(id),
          },
          data: sealed,
        };
      }),
    );
  }

  /** Rejects (never throws) for a payload that cannot be decrypted, as callers of a codec expect. */
  decode(payloads: Payload[]): Promise<Payload[]> {
    return new Promise((resolve) => resolve(payloads.map((payload) => this.decodeOne(payload))));
  }

  private decodeOne(payload: Payload): Payload {
    const text = (bytes: Uint8Array | null | undefined): string | undefined =>
      bytes ? Buffer.from(bytes).toString() : undefined;
    if (text(payload.metadata?.encoding) !== ENCRYPTED_ENCODING) return payload;
    const id = text(payload.metadata?.[KEY_ID_METADATA]);
    const key = id === undefined ? undefined : this.byId.get(id);
    if (id === undefined || key === undefined) {
      throw new Error(
        `a payload is encrypted with key ${JSON.stringify(id ?? '(no id)')}, which ${CODEC_KEYS_ENV} does not hold ` +
          `(it holds ${[...this.byId.keys()].join(', ')}): add that key to decrypt it`,
      );
    }
    const sealed = Buffer.from(payload.data ?? new Uint8Array());
    if (sealed.length < IV_BYTES + TAG_BYTES) {
      throw new Error(`an encrypted payload (key ${id}) is ${sealed.length} bytes: too short to be one`);
    }
    const decipher = createDecipheriv(CIPHER, key, sealed.subarray(0, IV_BYTES)).setAAD(associatedData(id));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([
        decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)),
        decipher.final(),
      ]);
    } catch {
      throw new Error(
        `an encrypted payload (key ${id}) failed authentication: it was altered, or key ${id} is not the key it was encrypted with`,
      );
    }
    return temporal.api.common.v1.Payload.decode(plain);
  }
}

/** The key id is authenticated with the data, so a payload relabelled with another key id fails. */
const associatedData = (id: string): Buffer => Buffer.from(`${ENCRYPTED_ENCODING}:${id}`);

/**
 * The data converter of every Temporal client and worker the project creates: the codec when keys are set,
 * the default (clear) converter otherwise.
 */
export function dataConverterFromEnv(env: NodeJS.ProcessEnv = process.env): DataConverter {
  const keys = codecKeysFromEnv(env);
  return keys ? { payloadCodecs: [new AesGcmCodec(keys)] } : {};
}
