import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { localPath, objectAtUri } from '../clients/storage';
import { compressionOf, jsonlLines } from '../clients/storage/codec';
import { PermanentReadError } from './errors';
import { kernelPython } from './python';

/**
 * The one reader of config-named input files (corpora, benchmarks, seed questions, answer sets): JSON Lines
 * (plain, `.gz`, `.zst`) or Parquet (`.parquet`, the format of Hugging Face datasets), from a path, file:// or
 * s3://, streamed in bounded memory. JSONL is read line by line; Parquet by the kernel package's
 * `parquet_rows` (with SELFPLAY_PYTHON, which needs pyarrow) row group by row group, its rows coming back over
 * a pipe whose back-pressure holds it to the pace of the consumer. An s3:// Parquet file is first copied to the
 * temporary directory (Parquet's footer, at its end, says where everything else is), and removed after.
 *
 * Columns: `columns` maps a field the caller reads to the file's column of another name (`{text: "content"}`),
 * so a dataset needs no rewriting. A Parquet file whose schema lacks a column the caller needs is refused before
 * its first row, naming the column and the file's columns; a JSONL line lacking a mapped column is a bad record.
 */

export type Row = Record<string, unknown>;

/** One record: its fields, or why it has none. `n` counts from 1; `at` names it (`line 3`, `row 3`). */
export type InputRecord = { n: number; at: string; row: Row } | { n: number; at: string; problem: string };

export interface InputReadOptions {
  /** `{field: column}`: the file's column for each field that has another name there. */
  columns?: Readonly<Partial<Record<string, string>>>;
  /** Fields every record needs: a Parquet file without their columns is refused whole. */
  required?: readonly string[];
  /** Where `columns` is configured (e.g. `corpus.columns`), for the error that says what to set. */
  columnsAt: string;
}

/** The records of the file at `uri`, in file order. */
export async function* readInputRecords(uri: string, options: InputReadOptions): AsyncGenerator<InputRecord> {
  if (/\.parquet$/i.test(uri)) {
    yield* parquetRecords(uri, options);
    return;
  }
  const { store, key } = objectAtUri(uri);
  const input = await store.getStream(key);
  if (!input) throw missingInput(uri);
  let n = 0;
  for await (const line of jsonlLines(input, compressionOf(uri), uri)) {
    n++;
    if (line.trim() !== '') yield withFields(parseRecord(line, n, `line ${n}`), options);
  }
}

/** The records of a JSONL text held whole, blank lines left out. */
export function jsonlRecords(text: string): InputRecord[] {
  return text
    .split('\n')
    .flatMap((line, i) => (line.trim() === '' ? [] : [parseRecord(line, i + 1, `line ${i + 1}`)]));
}

function parseRecord(line: string, n: number, at: string): InputRecord {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { n, at, problem: 'not JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { n, at, problem: 'not a JSON object' };
  return { n, at, row: value as Row };
}

/** The record with its mapped columns under the caller's field names. */
function withFields(record: InputRecord, { columns = {} }: InputReadOptions): InputRecord {
  if (!('row' in record)) return record;
  const row = { ...record.row };
  for (const [field, column] of Object.entries(columns)) {
    if (column === undefined || column === field) continue;
    if (!(column in row))
      return { n: record.n, at: record.at, problem: `no column "${column}" (for "${field}")` };
    row[field] = row[column];
    delete row[column];
  }
  return { ...record, row };
}

/** Why a file with these columns cannot give the caller its fields, if it cannot. */
function missingColumn(have: readonly string[], options: InputReadOptions): string | undefined {
  const fields = new Set([...(options.required ?? []), ...Object.keys(options.columns ?? {})]);
  for (const field of fields) {
    const column = options.columns?.[field] ?? field;
    if (!have.includes(column)) {
      return (
        `no column "${column}"${column === field ? '' : ` (for "${field}")`}; its columns are ` +
        `${have.map((c) => `"${c}"`).join(', ') || 'none'}: set ${options.columnsAt}.${field} to the one that holds ${field}`
      );
    }
  }
  return undefined;
}

const missingInput = (uri: string): PermanentReadError =>
  new PermanentReadError(`no object at ${uri}: the file or key does not exist`);

const PARQUET_ROWS = 'selfplay_kernel.parquet_rows';

async function* parquetRecords(uri: string, options: InputReadOptions): AsyncGenerator<InputRecord> {
  const copy = uri.startsWith('s3://') ? await localCopy(uri) : undefined;
  const python = kernelPython();
  const child = spawn(python, ['-m', PARQUET_ROWS, 'read', copy?.file ?? localPath(uri)], {
    // The environment SELFPLAY_PYTHON was read from (named: a test's differs from the process's own).
    env: process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
  // Awaited below; until then a failure to start must not go unhandled.
  exited.catch(() => undefined);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
  try {
    let columns: string[] | undefined;
    let n = 0;
    for await (const line of jsonlLines(child.stdout, 'none', uri)) {
      if (columns === undefined) {
        columns = (JSON.parse(line) as { columns: string[] }).columns;
        const missing = missingColumn(columns, options);
        if (missing) throw new PermanentReadError(missing);
        continue;
      }
      n++;
      yield withFields(parseRecord(line, n, `row ${n}`), options);
    }
    const [code, signal] = await exited.catch((err: unknown) => {
      throw new PermanentReadError(
        `cannot start ${python} to read Parquet (${String(err)}): set SELFPLAY_PYTHON to a Python with ` +
          'pyarrow and the kernel package (pip install infra/kernels)',
      );
    });
    if (signal) throw new Error(`reading Parquet: ${python} -m ${PARQUET_ROWS} was killed (${signal})`);
    // Status 2: the file is not Parquet (one line says why); else the Python lacks something (its last line).
    const why = stderr.trim().split('\n').at(-1) || `${PARQUET_ROWS} exited with ${code}`;
    if (code === 2) throw new PermanentReadError(why);
    if (code !== 0)
      throw new PermanentReadError(
        `cannot read Parquet with ${python} (${why}): set SELFPLAY_PYTHON to a Python with pyarrow and ` +
          'the kernel package (pip install infra/kernels)',
      );
  } finally {
    child.kill();
    if (copy) await rm(copy.dir, { recursive: true, force: true });
  }
}

/** An s3:// object streamed to a file of its own in the temporary directory. */
async function localCopy(uri: string): Promise<{ dir: string; file: string }> {
  const { store, key } = objectAtUri(uri);
  const input = await store.getStream(key);
  if (!input) throw missingInput(uri);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'selfplay-input-'));
  const file = path.join(dir, path.basename(key));
  try {
    await pipeline(input, createWriteStream(file));
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return { dir, file };
}
