import { InferencePool, type LlmCaller } from '../../activities/clients/inference';
import { SPICE_CALLS } from '../../activities/clients/llm-protocol';
import { LocalStore } from '../../activities/clients/storage';
import { recipeContext } from '../../activities/stages/deps';
import { loadWorkerEnv } from '../../config/env';

/**
 * A recipe's LLM for `role` as a shard's stage context gives it (weight checks and model names included), on
 * a worker with no store or recipes: what a shard asks its servers.
 */
export function shardLlm(input: Parameters<typeof recipeContext>[1], role: string): LlmCaller {
  const deps = {
    store: new LocalStore('/nonexistent'),
    env: loadWorkerEnv({ SELFPLAY_STORAGE: '/nonexistent', SELFPLAY_INFERENCE_CONCURRENCY: '4' }),
    inference: new InferencePool(),
    recipes: {},
  };
  return recipeContext(deps, input, 'solve', new AbortController().signal, undefined).llm(role);
}

/** One reasoner request, which the scripted LLM answers. */
export const askReasoner = (llm: LlmCaller) =>
  llm.chat({
    role: 'reasoner',
    call: SPICE_CALLS.reason,
    messages: [{ role: 'user', content: 'Problem 0000abcd: compute 3 * 4 + 1.' }],
    n: 1,
    seed: 1,
    temperature: 1,
    topP: 1,
    maxTokens: 16,
  });
