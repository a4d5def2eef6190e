import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { compressionOf, jsonlLines } from '../../../activities/clients/storage/codec';
import type { TrainingRow, TrainStepRequest } from '../../../activities/clients/trainer-contract';
import { fieldPath } from '../http-json';
import { trainingRowSchema } from './schemas';

/**
 * Reads a training batch by reference and checks it as the kernel must before touching weights: the bytes
 * are the ones the request names (sha256 of the stored object), they decode (gzip when the URI ends in .gz),
 * every JSONL line is a valid TrainingRow, and the row count matches. As the kernel's (selfplay_kernel/batch.py),
 * bytes that hash to another sha256 or do not decode are a corrupt object (422, which the trainer client makes
 * a non-retryable `CorruptData`); rows that decode but break the contract are a 400.
 */

/** 422 `corrupt_object`: the stored bytes are not what was written, and no retry reads other bytes. */
export const corruptObject = (message: string): TrainerRefusal =>
  new TrainerRefusal(422, 'corrupt_object', message);

/** A request the trainer refuses: `status` and `type` go into the contract's error body. */
export class TrainerRefusal extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/** A missing object, as fs, the S3 SDK or storage's readObjectAtUri ("no object at ...") report it. */
const isMissing = (err: unknown): boolean => {
  const e = err as { code?: unknown; name?: unknown; message?: unknown };
  return (
    e.code === 'ENOENT' ||
    e.name === 'NoSuchKey' ||
    e.name === 'NotFound' ||
    (typeof e.message === 'string' && e.message.startsWith('no object at '))
  );
};

export async function loadBatch(
  batch: TrainStepRequest['batch'],
  readBatch: (uri: string) => Promise<Buffer>,
): Promise<TrainingRow[]> {
  let raw: Buffer;
  try {
    raw = await readBatch(batch.uri);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    // A missing object cannot appear by retrying; anything else (a storage outage) might.
    if (isMissing(err))
      throw new TrainerRefusal(400, 'batch_not_found', `batch.uri: no object at ${batch.uri}`);
    throw new TrainerRefusal(503, 'batch_unreadable', `batch.uri: reading ${batch.uri} failed: ${reason}`);
  }
  const sha256 = createHash('sha256').update(raw).digest('hex');
  if (sha256 !== batch.sha256) {
    throw corruptObject(`batch.sha256: the object's sha256 is ${sha256}, not ${batch.sha256}`);
  }
  // Line by line, as the kernel reads it: a batch at B = 1024, G = 16 is longer than any JavaScript string.
  const rows: TrainingRow[] = [];
  let lineNumber = 0;
  try {
    for await (const line of jsonlLines(Readable.from([raw]), compressionOf(batch.uri), batch.uri)) {
      lineNumber++;
      if (line.trim() !== '') rows.push(parseRow(line, lineNumber));
    }
  } catch (err) {
    if (err instanceof TrainerRefusal) throw err;
    const cause = ((err as Error).cause ?? err) as Error;
    throw corruptObject(`batch.uri: not a gzip object: ${cause.message}`);
  }
  if (rows.length !== batch.rows) {
    throw new TrainerRefusal(
      400,
      'batch_invalid',
      `batch.rows: the batch holds ${rows.length} rows, not ${batch.rows}`,
    );
  }
  return rows;
}

function parseRow(line: string, lineNumber: number): TrainingRow {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw corruptObject(`batch line ${lineNumber}: not JSON`);
  }
  const parsed = trainingRowSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = `batch line ${lineNumber}: ${fieldPath(issue?.path ?? [])}`;
    throw new TrainerRefusal(400, 'batch_invalid', `${where}: ${issue?.message ?? 'invalid row'}`);
  }
  return parsed.data;
}
