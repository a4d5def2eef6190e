import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import { PermanentReadError } from '../../lib/errors';
import { assertRange, assertValidKey, assertValidPrefix } from './key-rules';
import type { ObjectStore, ObjectVersion } from './types';

export interface S3ClientOptions {
  /** An S3-compatible server such as MinIO; unset means AWS S3. */
  endpoint?: string;
  region?: string;
  /** Total tries per request, including the first; the SDK backs off between them. */
  maxAttempts?: number;
  /** Deadline per HTTP request (one attempt). */
  requestTimeoutMs?: number;
  connectionTimeoutMs?: number;
}

/**
 * A bounded client: every request has a deadline and the SDK's standard retries. Credentials are never passed
 * in: the SDK's default chain reads AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, profiles or instance roles.
 */
export function createS3Client(options: S3ClientOptions = {}): S3Client {
  const { endpoint } = options;
  return new S3Client({
    region: options.region ?? 'us-east-1',
    maxAttempts: options.maxAttempts ?? 5,
    requestHandler: {
      connectionTimeout: options.connectionTimeoutMs ?? 5_000,
      requestTimeout: options.requestTimeoutMs ?? 120_000,
      throwOnRequestTimeout: true,
    },
    ...(endpoint
      ? {
          endpoint,
          // S3-compatible servers address buckets by path, and not all of them speak the newer checksums.
          forcePathStyle: true,
          requestChecksumCalculation: 'WHEN_REQUIRED',
          responseChecksumValidation: 'WHEN_REQUIRED',
        }
      : {}),
  });
}

/** S3_ENDPOINT and AWS_REGION from the environment; one client per configuration per process. */
export function defaultS3Client(): S3Client {
  const endpoint = process.env.S3_ENDPOINT || undefined;
  const region = process.env.AWS_REGION || 'us-east-1';
  const id = `${endpoint ?? 'aws'}|${region}`;
  let client = clients.get(id);
  if (!client) {
    client = createS3Client({ endpoint, region });
    clients.set(id, client);
  }
  return client;
}
const clients = new Map<string, S3Client>();

export interface S3StoreOptions {
  bucket: string;
  /** Keys live under `prefix/`; '' uses the bucket root. */
  prefix?: string;
  client?: S3Client;
}

/** The data plane on S3 or any S3-compatible server. A single PutObject is atomic, so put needs no temp key. */
export class S3Store implements ObjectStore {
  readonly root: string;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly client: S3Client;

  constructor(options: S3StoreOptions) {
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(options.bucket)) {
      throw new PermanentReadError(
        `S3 bucket name ${JSON.stringify(options.bucket)} is invalid (3-63 chars: a-z, 0-9, '.', '-')`,
      );
    }
    const prefix = (options.prefix ?? '').replace(/^\/+|\/+$/g, '');
    if (prefix !== '') assertValidPrefix(prefix);
    this.bucket = options.bucket;
    this.prefix = prefix;
    this.client = options.client ?? defaultS3Client();
    this.root = prefix === '' ? `s3://${this.bucket}` : `s3://${this.bucket}/${prefix}`;
  }

  async get(key: string): Promise<Buffer | undefined> {
    try {
      const res = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key) }),
      );
      return res.Body ? Buffer.from(await res.Body.transformToByteArray()) : Buffer.alloc(0);
    } catch (err) {
      if (isNotFound(err, 'NoSuchKey')) return undefined;
      throw this.failure('GetObject', key, err);
    }
  }

  async getRange(key: string, start: number, end: number): Promise<Buffer | undefined> {
    assertRange(start, end);
    try {
      const res = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: this.fullKey(key),
          Range: `bytes=${start}-${end - 1}`,
        }),
      );
      return res.Body ? Buffer.from(await res.Body.transformToByteArray()) : Buffer.alloc(0);
    } catch (err) {
      if (isNotFound(err, 'NoSuchKey')) return undefined;
      // A range starting at or past the end of the object: no bytes there.
      if ((err as Error).name === 'InvalidRange') return Buffer.alloc(0);
      throw this.failure('GetObject', key, err);
    }
  }

  async put(key: string, body: Buffer | string): Promise<void> {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    try {
      await this.client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key), Body: bytes }),
      );
    } catch (err) {
      throw this.failure('PutObject', key, err);
    }
  }

  /**
   * A conditional PutObject (`If-None-Match: *`, AWS S3 and MinIO since 2024): 412 when the key exists. A 409
   * (a concurrent conditional write still in progress) stays an error, retried as any other.
   */
  async create(key: string, body: Buffer | string): Promise<boolean> {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    try {
      await this.client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key), Body: bytes, IfNoneMatch: '*' }),
      );
      return true;
    } catch (err) {
      if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 412)
        return false;
      throw this.failure('PutObject', key, err);
    }
  }

  async getStream(key: string): Promise<Readable | undefined> {
    try {
      const res = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key) }),
      );
      return res.Body ? (res.Body as Readable) : Readable.from([]);
    } catch (err) {
      if (isNotFound(err, 'NoSuchKey')) return undefined;
      throw this.failure('GetObject', key, err);
    }
  }

  async stat(key: string): Promise<ObjectVersion | undefined> {
    try {
      const res = await this.client.send(
        new HeadObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key) }),
      );
      return { size: res.ContentLength ?? 0, tag: `etag:${res.ETag ?? ''}` };
    } catch (err) {
      if (isNotFound(err, 'NotFound')) return undefined;
      throw this.failure('HeadObject', key, err);
    }
  }

  async exists(key: string): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key) }));
      return true;
    } catch (err) {
      if (isNotFound(err, 'NotFound')) return false;
      throw this.failure('HeadObject', key, err);
    }
  }

  async list(prefix: string): Promise<string[]> {
    assertValidPrefix(prefix);
    const full = this.prefix === '' ? prefix : `${this.prefix}/${prefix}`;
    const strip = this.prefix === '' ? 0 : this.prefix.length + 1;
    const keys: string[] = [];
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({ Bucket: this.bucket, Prefix: full, ContinuationToken: token }),
        );
      } catch (err) {
        throw this.failure('ListObjectsV2', prefix, err);
      }
      for (const object of page.Contents ?? []) if (object.Key) keys.push(object.Key.slice(strip));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return keys.sort();
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key) }));
    } catch (err) {
      throw this.failure('DeleteObject', key, err);
    }
  }

  uri(key: string): string {
    return `s3://${this.bucket}/${this.fullKey(key)}`;
  }

  private fullKey(key: string): string {
    assertValidKey(key);
    return this.prefix === '' ? key : `${this.prefix}/${key}`;
  }

  private failure(operation: string, key: string, err: unknown): Error {
    const name = (err as Error).name;
    const hint =
      name === 'NoSuchBucket'
        ? ` (create bucket ${this.bucket}; locally 'bash infra/local/minio.sh start' does)`
        : name === 'InvalidAccessKeyId' ||
            name === 'SignatureDoesNotMatch' ||
            name === 'CredentialsProviderError'
          ? ' (check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY in the worker environment)'
          : '';
    return new Error(`S3 ${operation} ${JSON.stringify(key)} in ${this.root} failed: ${String(err)}${hint}`, {
      cause: err,
    });
  }
}

/** A missing key, as opposed to a missing bucket (also a 404), which must surface as an error. */
function isNotFound(err: unknown, name: string): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === name || (e.$metadata?.httpStatusCode === 404 && e.name !== 'NoSuchBucket');
}
