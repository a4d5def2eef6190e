import type { ObjectStore } from '../clients/storage/types';
import { getJson, putJson } from '../clients/storage/codec';
import { iterationPrefix } from '../clients/storage/keys';

/**
 * A recipe's persistent state (task pool, history memory) is training state: written next to the
 * iteration's outputs by the filter, referenced by the commit, and read back by every stage of the next
 * iteration, after continue-as-new, a crash or a resume alike.
 */
export const recipeStateKey = (runId: string, iteration: number): string =>
  `${iterationPrefix(runId, iteration)}/recipe-state.json.gz`;

export async function loadRecipeState(store: ObjectStore, key: string | undefined): Promise<unknown> {
  if (!key) return undefined;
  const state = await getJson<unknown>(store, key);
  if (state === undefined)
    throw new Error(`${store.uri(key)} is missing: the committed recipe state cannot be read`);
  return state;
}

export async function saveRecipeState(
  store: ObjectStore,
  runId: string,
  iteration: number,
  state: unknown,
): Promise<string> {
  const key = recipeStateKey(runId, iteration);
  await putJson(store, key, state);
  return key;
}
