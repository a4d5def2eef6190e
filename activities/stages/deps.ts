import { setMaxListeners } from 'node:events';
import type { ObjectStore } from '../clients/storage/types';
import type { WorkerEnv } from '../../config/env';
import { endpointFor, syncServersFor } from '../../config/env';
import { digestsOf, type WeightSnapshot } from '../../contracts/selfplay';
import { policyForRole } from '../../config/policies';
import type { InferencePool, LlmCaller } from '../clients/inference';
import type { WeightTag } from '../clients/weight-tag';
import { engineRoot } from '../../config/server-url';
import { digestPrefix } from '../../config/model-name';
import type { RunConfig } from '../../config/schema';
import type { AnyRecipe, RecipeContext } from '../recipes/types';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import { retrieverFor } from '../retrieval/retriever';
import { unitPartKey } from '../clients/storage/keys';
import { storedValue } from '../clients/storage/codec';
import { requireInputs } from '../../config/run-access';

/** What every activity is built with: one per worker process, shared by all concurrent activities. */
export interface ActivityDeps {
  store: ObjectStore;
  env: WorkerEnv;
  inference: InferencePool;
  recipes: Readonly<Record<string, AnyRecipe>>;
}

export function recipeFor(deps: ActivityDeps, config: RunConfig): AnyRecipe {
  const recipe = deps.recipes[config.recipe];
  if (!recipe) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `this worker has no recipe "${config.recipe}"; it has ${Object.keys(deps.recipes).join(', ')}`,
    );
  }
  return recipe;
}

/** The context of a recipe's part of `stage` for one shard. */
export function recipeContext(
  deps: ActivityDeps,
  input: {
    config: RunConfig;
    runId: string;
    iteration: number;
    shard: number;
    versions: Record<string, number>;
    /** The snapshots the shard's servers were synced to: their digests name vLLM's adapters and check answers. */
    snapshots?: WeightSnapshot[];
  },
  stage: string,
  signal: AbortSignal,
  state: unknown,
): RecipeContext {
  // Every concurrent LLM call of the shard listens on the activity's one cancellation signal.
  setMaxListeners(0, signal);
  // A stage may read the recipe's inputs (MAE's seeds in its filter): refused outside the roots, as in the plan.
  requireInputs(input.config, deps.env);
  return {
    config: input.config,
    runId: input.runId,
    iteration: input.iteration,
    shard: input.shard,
    versions: input.versions,
    signal,
    state,
    llm: (role) => roleCaller(deps, input, role, digestsOf(input.snapshots)),
    retriever: () => retrieverFor(input.config, deps),
    unitPart: (unit, name) =>
      storedValue(deps.store, unitPartKey(input.runId, input.iteration, stage, input.shard, unit, name)),
  };
}

/**
 * The LLM a role calls. Its requests wait for the client's completions ranked by iteration within the run
 * (`ChatRequest.rank`), so an iteration streaming beside an older one takes only what the older leaves free.
 * When weight sync keeps the role's server at its policy's version, every request also says which version
 * that is, so an answer from other weights fails instead of entering the run (inference.ts).
 */
function roleCaller(
  deps: ActivityDeps,
  input: { config: RunConfig; runId: string; iteration: number; versions: Readonly<Record<string, number>> },
  role: string,
  digests: Readonly<Record<string, string>>,
): LlmCaller {
  const { config, versions } = input;
  const rank = { group: input.runId, rank: input.iteration };
  const settings = endpointFor(role, config, deps.env, versions, digests);
  const endpoint = deps.inference.endpoint(settings);
  const weights = syncedWeights(
    deps,
    config,
    settings.baseUrl,
    policyForRole(config, role)?.name,
    versions,
    digests,
  );
  return {
    chat: (request) => endpoint.chat({ ...request, rank, ...(weights ? { weights } : {}) }),
  };
}

/** The weights a request names: its policy's synced version, when weight sync keeps this server at it. */
function syncedWeights(
  deps: ActivityDeps,
  config: RunConfig,
  baseUrl: string,
  policy: string | undefined,
  versions: Readonly<Record<string, number>>,
  digests: Readonly<Record<string, string>>,
): WeightTag | undefined {
  if (config.weightSync.engine === 'none' || policy === undefined) return undefined;
  const version = versions[policy];
  // A sync server may be named by its root or by its OpenAI base URL (`…/v1`): the same server.
  const root = engineRoot(baseUrl);
  const synced = syncServersFor(config, deps.env, policy).some((server) => engineRoot(server) === root);
  if (version === undefined || !synced) return undefined;
  const digest = digests[policy];
  return {
    version,
    ...(config.runId ? { run: config.runId } : {}),
    ...(digest ? { digest: digestPrefix(digest) } : {}),
  };
}
