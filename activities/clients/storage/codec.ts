import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import type { ObjectStore } from './types';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** JSON (or JSON Lines) objects, gzipped when the key ends in `.gz`. Missing objects read as undefined. */
export async function putJson(store: ObjectStore, key: string, value: unknown): Promise<void> {
  const text = JSON.stringify(value);
  if (text === undefined)
    throw new Error(`cannot store ${store.uri(key)}: the value is not JSON-serialisable`);
  await store.put(key, await encode(key, text));
}

export async function getJson<T>(store: ObjectStore, key: string): Promise<T | undefined> {
  const text = await readText(store, key);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new Error(`${store.uri(key)} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
}

/** One JSON value per line, newline-terminated. Returns the bytes stored (e.g. to hash them). */
export async function putJsonl(store: ObjectStore, key: string, rows: readonly unknown[]): Promise<Buffer> {
  const lines = rows.map((row, i) => {
    const line = JSON.stringify(row);
    if (line === undefined)
      throw new Error(`cannot store ${store.uri(key)}: row ${i} is not JSON-serialisable`);
    return `${line}\n`;
  });
  const body = await encode(key, lines.join(''));
  await store.put(key, body);
  return body;
}

export async function getJsonl<T>(store: ObjectStore, key: string): Promise<T[] | undefined> {
  const text = await readText(store, key);
  if (text === undefined) return undefined;
  const rows: T[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      rows.push(JSON.parse(line) as T);
    } catch (err) {
      throw new Error(`${store.uri(key)} line ${i + 1} is not valid JSON: ${(err as Error).message}`, {
        cause: err,
      });
    }
  });
  return rows;
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
    throw new Error(`${store.uri(key)} is not valid gzip: ${(err as Error).message}`, { cause: err });
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
