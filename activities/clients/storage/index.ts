import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PermanentReadError } from '../../lib/errors';
import { LocalStore } from './local';
import { S3Store } from './s3';
import type { ObjectStore } from './types';

export type { ObjectStore, ObjectVersion } from './types';
export * from './keys';
export { LocalStore } from './local';
export { S3Store, createS3Client, defaultS3Client, type S3ClientOptions, type S3StoreOptions } from './s3';

/**
 * The store a run's config names: `s3://bucket/prefix` (S3 or S3_ENDPOINT's server), `file:///abs/dir`, or a
 * plain directory path (relative to the working directory).
 */
export function openStore(uri: string): ObjectStore {
  if (uri.startsWith('s3://')) {
    const { bucket, rest } = splitS3Uri(uri);
    return new S3Store({ bucket, prefix: rest });
  }
  return new LocalStore(localPath(uri));
}

/**
 * Reads one object named by a full URI (as `ObjectStore.uri` returns), e.g. a corpus file or a checkpoint. A
 * missing object or a malformed URI is a `PermanentReadError`; an outage is a plain Error.
 */
export async function readObjectAtUri(uri: string): Promise<Buffer> {
  if (uri.startsWith('s3://')) {
    const { bucket, rest } = splitS3Uri(uri);
    if (rest === '') throw new PermanentReadError(`${uri} names a bucket, not an object`);
    const body = await new S3Store({ bucket }).get(rest);
    if (body === undefined)
      throw new PermanentReadError(`no object at ${uri}: the key does not exist in bucket ${bucket}`);
    return body;
  }
  const file = localPath(uri);
  try {
    return await readFile(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR')
      throw new PermanentReadError(`no object at ${uri}: ${file} does not exist`);
    throw new Error(`cannot read ${uri}: ${String(err)}`, { cause: err });
  }
}

/**
 * The store holding the object a full URI names, and its key there: for what reads an object piece by piece
 * (`getStream`, `getRange`, `stat`), such as a corpus too large to read whole.
 */
export function objectAtUri(uri: string): { store: ObjectStore; key: string } {
  if (uri.startsWith('s3://')) {
    const { bucket, rest } = splitS3Uri(uri);
    if (rest === '') throw new PermanentReadError(`${uri} names a bucket, not an object`);
    return { store: new S3Store({ bucket }), key: rest };
  }
  const file = localPath(uri);
  return { store: new LocalStore(path.dirname(file)), key: path.basename(file) };
}

/** Writes one object named by a full URI (atomically, like `ObjectStore.put`). */
export async function writeObjectAtUri(uri: string, body: Buffer | string): Promise<void> {
  if (uri.startsWith('s3://')) {
    const { bucket, rest } = splitS3Uri(uri);
    if (rest === '') throw new Error(`${uri} names a bucket, not an object`);
    return new S3Store({ bucket }).put(rest, body);
  }
  const file = localPath(uri);
  return new LocalStore(path.dirname(file)).put(path.basename(file), body);
}

function splitS3Uri(uri: string): { bucket: string; rest: string } {
  const body = uri.slice('s3://'.length);
  const slash = body.indexOf('/');
  const bucket = slash < 0 ? body : body.slice(0, slash);
  if (bucket === '') throw new PermanentReadError(`${uri} has no bucket; expected s3://bucket/prefix`);
  return { bucket, rest: slash < 0 ? '' : body.slice(slash + 1).replace(/\/+$/, '') };
}

/** The file a local path or `file:` URI names (an absolute path). */
export function localPath(uri: string): string {
  if (uri.startsWith('file:')) return fileURLToPath(uri);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(uri)) {
    throw new PermanentReadError(
      `unsupported storage URI ${uri}: use s3://bucket/prefix, file:///abs/dir or a local path`,
    );
  }
  return path.resolve(uri);
}
