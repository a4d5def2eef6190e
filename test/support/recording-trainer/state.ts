import { readFile, rename, writeFile } from 'node:fs/promises';
import { z } from 'zod';
import type { TrainStepResponse } from '../../../activities/clients/trainer-contract';
import { trainStepResponseSchema } from './schemas';

/**
 * What the trainer must remember across its own restarts to keep "at most once": each policy's version, the
 * first response to every applied key, and the record of applied steps. Saved whole, to a temporary file
 * renamed over the old one, so a crash mid-write leaves the previous state intact.
 */

export interface StepRecord {
  key: string;
  runId: string;
  iteration: number;
  policy: string;
  baseVersion: number;
  rows: number;
  /** Rows per recipe role. */
  roles: Record<string, number>;
  /**
   * A restore to an earlier version discarded the weights this step changed (a kernel's restart, a rollback):
   * the step stays in the record, but its effect did not survive, so applying its key again is not twice.
   */
  rolledBack?: true;
}

/** The steps whose effect survives in the weights: those no restore rolled back. */
export const survivingSteps = (steps: readonly StepRecord[]): StepRecord[] =>
  steps.filter((s) => !s.rolledBack);

export interface TrainerState {
  versions: Record<string, number>;
  responses: Record<string, TrainStepResponse>;
  steps: StepRecord[];
}

const stateSchema = z.strictObject({
  versions: z.record(z.string(), z.number().int().min(0)),
  responses: z.record(z.string(), trainStepResponseSchema),
  steps: z.array(
    z.strictObject({
      key: z.string(),
      runId: z.string(),
      iteration: z.number().int(),
      policy: z.string(),
      baseVersion: z.number().int(),
      rows: z.number().int(),
      roles: z.record(z.string(), z.number().int()),
      rolledBack: z.literal(true).optional(),
    }),
  ),
});

export const emptyState = (): TrainerState => ({ versions: {}, responses: {}, steps: [] });

/** The saved state, or an empty one when the file does not exist yet. */
export async function loadState(file: string): Promise<TrainerState> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return emptyState();
    throw err;
  }
  return stateSchema.parse(JSON.parse(text));
}

export async function saveState(file: string, state: TrainerState): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, JSON.stringify(state));
  await rename(temporary, file);
}
