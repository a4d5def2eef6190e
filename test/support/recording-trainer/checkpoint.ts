import { createHash } from 'node:crypto';
import type { z } from 'zod';
import { isStorageFull, STORAGE_FULL_ADVICE } from '../../../activities/lib/errors';
import { corruptObject, TrainerRefusal } from './batch';
import { checkpointSchema } from './schemas';

/**
 * The recording trainer's checkpoint objects as the kernel keeps its own (selfplay_kernel/state.py): the files
 * first, then a `COMPLETE` marker naming each file's sha256, which a restore checks before it decodes anything.
 */

export type SavedCheckpoint = z.infer<typeof checkpointSchema>;

const sha256 = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');

/** The marker of a checkpoint whose `state.json` is `state`. */
export const checkpointMarker = (
  policy: string,
  policyVersion: number,
  state: string,
): Record<string, unknown> => ({ policy, policyVersion, files: { 'state.json': sha256(state) } });

/**
 * A complete checkpoint's `state.json`, read back: 404 `checkpoint_not_found` without its marker; 422
 * `corrupt_object` when its bytes are not those the marker names (a marker from before it named any has nothing
 * to compare) or do not decode, as the kernel answers; a retry would read the same bytes.
 */
export async function readCheckpoint(
  read: (uri: string) => Promise<Buffer>,
  base: string,
): Promise<SavedCheckpoint> {
  const marker = await read(`${base}/COMPLETE`).catch(() => {
    throw new TrainerRefusal(404, 'checkpoint_not_found', `no complete checkpoint at ${base}`);
  });
  const uri = `${base}/state.json`;
  const bytes = await read(uri);
  const expected = namedDigest(marker, 'state.json');
  const found = sha256(bytes);
  if (expected !== undefined && found !== expected) {
    throw corruptObject(
      `${uri} is corrupt: its sha256 is ${found.slice(0, 12)}, not the one its COMPLETE marker names ` +
        `(${expected.slice(0, 12)}); delete or restore it`,
    );
  }
  try {
    return checkpointSchema.parse(JSON.parse(bytes.toString('utf8')));
  } catch (err) {
    throw corruptObject(`${uri} is corrupt: ${String(err)}; delete or restore it`);
  }
}

/** The sha256 a marker names for `file`; undefined for a marker without one (empty, or from before digests). */
function namedDigest(marker: Buffer, file: string): string | undefined {
  try {
    const parsed = JSON.parse(marker.toString('utf8')) as { files?: Record<string, unknown> };
    const digest = parsed.files?.[file];
    return typeof digest === 'string' ? digest : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `write()` of a checkpoint or snapshot object, with full storage answered 507 `storage_full` as the kernel
 * answers it (no retry frees space: the client fails at once, `StorageFull`); any other failure as it is.
 */
export async function writeOrStorageFull(write: () => Promise<void>): Promise<void> {
  try {
    await write();
  } catch (err) {
    if (!isStorageFull(err)) throw err;
    throw new TrainerRefusal(507, 'storage_full', `${STORAGE_FULL_ADVICE} (${String(err)})`);
  }
}
