import { once } from 'node:events';
import { Readable, type Transform } from 'node:stream';
import { finished } from 'node:stream/promises';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { createGzip, gunzip, gzip } from 'node:zlib';
import { CorruptObjectError, PermanentReadError } from '../../lib/errors';
import type { ObjectStore } from './types';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/**
 * JSON (or JSON Lines) objects, gzipped when the key ends in `.gz`. Missing objects read as undefined; one that
 * does not decode (not gzip, truncated, not JSON) is a `CorruptObjectError`, which no retry fixes.
 */
export async function putJson(store: ObjectStore, key: string, value: unknown): Promise<void> {
  await store.put(key, await jsonBytes(store, key, value));
}

/** `putJson` unless an object has the key (`ObjectStore.create`): false, writing nothing, when one has. */
export async function createJson(store: ObjectStore, key: string, value: unknown): Promise<boolean> {
  return store.create(key, await jsonBytes(store, key, value));
}

async function jsonBytes(store: ObjectStore, key: string, value: unknown): Promise<Buffer> {
  const text = JSON.stringify(value);
  if (text === undefined)
    throw new Error(`cannot store ${store.uri(key)}: the value is not JSON-serialisable`);
  return encode(key, text);
}

export async function getJson<T>(store: ObjectStore, key: string): Promise<T | undefined> {
  const text = await readText(store, key);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new CorruptObjectError(`${store.uri(key)} is not valid JSON: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/**
 * One JSON value per line, newline-terminated. Rows are serialised one at a time into the (gzip) stream, so no
 * string ever holds the whole object: a batch at B = 1024, G = 16 with long segments is far larger than the
 * longest string V8 allows (~512 MiB). Returns the bytes stored (e.g. to hash them).
 */
export async function putJsonl(
  store: ObjectStore,
  key: string,
  rows: Iterable<unknown> | AsyncIterable<unknown>,
): Promise<Buffer> {
  const body = await jsonlBytes(store, key, rows);
  await store.put(key, body);
  return body;
}

/** `putJsonl` unless an object has the key (`ObjectStore.create`): false, writing nothing, when one has. */
export async function createJsonl(
  store: ObjectStore,
  key: string,
  rows: Iterable<unknown> | AsyncIterable<unknown>,
): Promise<boolean> {
  return store.create(key, await jsonlBytes(store, key, rows));
}

const jsonlBytes = (
  store: ObjectStore,
  key: string,
  rows: Iterable<unknown> | AsyncIterable<unknown>,
): Promise<Buffer> =>
  encodeJsonl(rows, key.endsWith('.gz'), (i) => `cannot store ${store.uri(key)}: row ${i}`);

/** The rows as JSON Lines bytes (gzipped when asked), serialised row by row. `where(i)` names row i in errors. */
export async function encodeJsonl(
  rows: Iterable<unknown> | AsyncIterable<unknown>,
  gzip: boolean,
  where: (row: number) => string,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const zip = gzip ? createGzip() : undefined;
  zip?.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = zip ? finished(zip) : Promise.resolve();
  let i = 0;
  try {
    for await (const row of rows) {
      const line = JSON.stringify(row);
      if (line === undefined) throw new Error(`${where(i)} is not JSON-serialisable`);
      const bytes = Buffer.from(`${line}\n`);
      if (!zip) chunks.push(bytes);
      else if (!zip.write(bytes)) await once(zip, 'drain');
      i++;
    }
  } catch (err) {
    zip?.destroy();
    await ended.catch(() => undefined);
    throw err;
  }
  zip?.end();
  await ended;
  return Buffer.concat(chunks);
}

export async function getJsonl<T>(store: ObjectStore, key: string): Promise<T[] | undefined> {
  const bytes = await store.get(key);
  if (bytes === undefined) return undefined;
  const rows: T[] = [];
  for await (const row of jsonlValues(Readable.from([bytes]), compressionOf(key), store.uri(key)))
    rows.push(row as T);
  return rows;
}

/** How a JSON Lines object's bytes are compressed, from its name: `.gz` gzip, `.zst` zstd, else not. */
export type Compression = 'gzip' | 'zstd' | 'none';
export const compressionOf = (name: string): Compression =>
  name.endsWith('.gz') ? 'gzip' : /\.zstd?$/.test(name) ? 'zstd' : 'none';

/**
 * The JSON values of a JSON Lines byte stream (decompressed as `compression` says), parsed line by line as the
 * bytes arrive: only one line is ever a string. Blank lines are skipped; `source` names the object in errors.
 */
export async function* jsonlValues(
  input: Readable,
  compression: Compression,
  source: string,
): AsyncGenerator<unknown> {
  let lineNo = 0;
  const parse = (line: string): unknown => {
    try {
      return JSON.parse(line);
    } catch (err) {
      throw new CorruptObjectError(`${source} line ${lineNo} is not valid JSON: ${(err as Error).message}`, {
        cause: err,
      });
    }
  };
  for await (const line of jsonlLines(input, compression, source)) {
    lineNo++;
    if (line.trim() !== '') yield parse(line);
  }
}

/**
 * The lines of a byte stream (decompressed as `compression` says), split on bytes so no string holds more than
 * one line. Bytes that do not decompress are a `CorruptObjectError` naming `source`.
 */
export async function* jsonlLines(
  input: Readable,
  compression: Compression,
  source: string,
): AsyncGenerator<string> {
  const bytes = decompressed(input, compression, source);
  let pending: Buffer[] = [];
  try {
    for await (const chunk of bytes as AsyncIterable<Buffer>) {
      let from = 0;
      for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, from)) {
        pending.push(chunk.subarray(from, nl));
        yield Buffer.concat(pending).toString('utf8');
        pending = [];
        from = nl + 1;
      }
      if (from < chunk.length) pending.push(chunk.subarray(from));
    }
  } catch (err) {
    const code = String((err as NodeJS.ErrnoException).code);
    if (code.startsWith('Z_') || code.startsWith('ZSTD_'))
      throw new CorruptObjectError(`${source} is not valid ${compression}: ${(err as Error).message}`, {
        cause: err,
      });
    throw err;
  }
  if (pending.length > 0) yield Buffer.concat(pending).toString('utf8');
}

function decompressed(input: Readable, compression: Compression, source: string): Readable {
  if (compression === 'none') return input;
  // Node has zstd from 22.15 (and 23.8); the worker image's Node may be older.
  const { createZstdDecompress } = zlib as { createZstdDecompress?: typeof zlib.createZstdDecompress };
  if (compression === 'zstd' && !createZstdDecompress)
    throw new PermanentReadError(
      `${source} is zstd, which this Node (${process.version}) cannot read: it needs Node 22.15 or later; ` +
        'or give the file as .jsonl.gz or .parquet',
    );
  const inflate = compression === 'gzip' ? zlib.createGunzip() : (createZstdDecompress as () => Transform)();
  // A failure of the input does not reach a piped decompressor on its own.
  input.once('error', (err) => inflate.destroy(err));
  return input.pipe(inflate);
}

async function encode(key: string, text: string): Promise<Buffer> {
  return key.endsWith('.gz') ? gzipAsync(text) : Buffer.from(text);
}

async function readText(store: ObjectStore, key: string): Promise<string | undefined> {
  const bytes = await store.get(key);
  if (bytes === undefined || !key.endsWith('.gz')) return bytes?.toString('utf8');
  try {
    return (await gunzipAsync(bytes)).toString('utf8');
  } catch (err) {
    throw new CorruptObjectError(`${store.uri(key)} is not valid gzip: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/** One JSON value kept at a key: what a unit keeps of its finished parts (`unitPartKey`). */
export interface StoredValue<T> {
  load(): Promise<T | undefined>;
  save(value: T): Promise<void>;
}

/** A value at `key`, each save replacing the whole object atomically (a reader sees one save or another). */
export function storedValue<T>(store: ObjectStore, key: string): StoredValue<T> {
  return {
    load: () => getJson<T>(store, key),
    save: (value) => putJson(store, key, value),
  };
}
