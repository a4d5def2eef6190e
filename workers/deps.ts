import { loadWorkerEnv, type WorkerEnv } from '../config/env';
import { InferencePool } from '../activities/clients/inference';
import { openStore } from '../activities/clients/storage';
import { RECIPES } from '../activities/recipes';
import type { ActivityDeps } from '../activities';

/** A worker process's shared dependencies, from its environment. */
export function depsFromEnv(env: WorkerEnv = loadWorkerEnv()): ActivityDeps {
  return { store: openStore(env.storageUri), env, inference: new InferencePool(), recipes: RECIPES };
}
