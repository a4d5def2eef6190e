import { openStore, type ObjectStore } from '../activities/clients/storage';
import { getJson } from '../activities/clients/storage/codec';
import { keptManifest } from '../activities/stages/lineage';

/** One part of a recipe's state (a pool, a memory) as an operator sees it: how big, and a few entries. */
export interface StatePart {
  name: string;
  size: number;
  sample: unknown[];
}

export interface StateReport {
  runId: string;
  iteration: number;
  recipe: string;
  stateKey?: string;
  parts: StatePart[];
}

/**
 * The recipe state committed at a kept iteration (the latest by default; after a rollback, along the run's
 * current lineage), read from storage exactly as the next iteration will read it. Each top-level field of the state is a part: arrays and objects are sized and
 * sampled (the first `sampleSize` entries), scalars shown as they are.
 */
export async function committedState(
  store: ObjectStore,
  runId: string,
  iteration?: number,
  sampleSize = 3,
): Promise<StateReport> {
  const { manifest } = await keptManifest(store, runId, iteration);
  const report: StateReport = { runId, iteration: manifest.iteration, recipe: manifest.recipe, parts: [] };
  if (!manifest.recipeStateKey) return report;
  const state = await getJson<unknown>(store, manifest.recipeStateKey);
  if (state === undefined) throw new Error(`${store.uri(manifest.recipeStateKey)} is missing`);
  report.stateKey = manifest.recipeStateKey;
  const fields =
    typeof state === 'object' && state !== null && !Array.isArray(state)
      ? Object.entries(state)
      : [['state', state] as const];
  report.parts = fields.map(([name, value]) => describe(name, value, sampleSize));
  return report;
}

function describe(name: string, value: unknown, sampleSize: number): StatePart {
  if (Array.isArray(value)) return { name, size: value.length, sample: value.slice(0, sampleSize) };
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value);
    return {
      name,
      size: entries.length,
      sample: entries.slice(0, sampleSize).map(([k, v]): Record<string, unknown> => ({ [k]: v as unknown })),
    };
  }
  return { name, size: 1, sample: [value] };
}

export const storeFromEnv = (): ObjectStore => openStore(process.env.SELFPLAY_STORAGE || '.selfplay/storage');
