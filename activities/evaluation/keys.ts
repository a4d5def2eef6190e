import { createHash } from 'node:crypto';
import { runPrefix } from '../clients/storage/keys';

/**
 * Where held-out verdicts live, beside a run's iterations (see clients/storage/keys.ts):
 *
 *   runs/{runId}/eval/{policy}/v000042/{benchmark}-{settings}/items/item-000017.json.gz   one item's samples
 *   runs/{runId}/eval/{policy}/v000042/{benchmark}-{settings}/results-{selection}.jsonl.gz every selected item
 *
 * `settings` hashes whatever changes an answer (file, format, prompt, sampling, model), so a run's in-run
 * evaluation and a later `selfplay eval` with the same settings share their items; `selection` names which
 * items (`all`, `first-50`, `subset-50-s7`), and selections of one file share the items they have in common.
 */
const pad = (n: number): string => String(n).padStart(6, '0');

export interface EvalSettingsKey {
  runId: string;
  policy: string;
  version: number;
  benchmark: string;
  /** Everything that changes an answer, hashed. */
  settings: unknown;
}

export function evalFolder(k: EvalSettingsKey): string {
  const hash = createHash('sha256').update(JSON.stringify(k.settings)).digest('hex').slice(0, 12);
  return `${runPrefix(k.runId)}/eval/${k.policy}/v${pad(k.version)}/${k.benchmark}-${hash}`;
}

export const evalItemsPrefix = (folder: string): string => `${folder}/items/`;
export const evalItemKey = (folder: string, index: number): string =>
  `${evalItemsPrefix(folder)}item-${pad(index)}.json.gz`;
export const evalResultsKey = (folder: string, selection: string): string =>
  `${folder}/results-${selection}.jsonl.gz`;

/** The selection's name in a key: every item, the first `limit`, or a seeded subset. */
export const selectionName = (limit: number | undefined, subsetSeed: number | undefined): string =>
  limit === undefined
    ? 'all'
    : subsetSeed === undefined
      ? `first-${limit}`
      : `subset-${limit}-s${subsetSeed}`;
