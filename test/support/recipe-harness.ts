import { resolveRunConfig, type RunConfig } from '../../config/schema';
import type { ChatRequest, ChatSample, LlmCaller } from '../../activities/clients/inference';
import type { RecipeContext } from '../../activities/recipes/types';

/** The resolved run config for these fields (`recipe` among them); a config the schema refuses throws. */
export function configFor(overrides: Record<string, unknown>): RunConfig {
  const r = resolveRunConfig(overrides);
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.config;
}

/** An LLM scripted per sample: `answer(req, i, nth)` for sample i of the nth request (from 0) with `req.call`; `calls` records every request. */
export function scriptedCaller(answer: (req: ChatRequest, i: number, nth: number) => string): {
  llm: LlmCaller;
  calls: ChatRequest[];
} {
  const calls: ChatRequest[] = [];
  const llm: LlmCaller = {
    chat: (req) => {
      calls.push(req);
      const nth = calls.filter((c) => c.call === req.call).length - 1;
      return Promise.resolve(
        Array.from({ length: req.n }, (_, i): ChatSample => ({
          content: answer(req, i, nth),
          finishReason: 'stop',
        })),
      );
    },
  };
  return { llm, calls };
}

/** A stage context for shard 0 of run "unit" (iteration 1, no state unless given); `llm` serves every role, or is asked per role. */
export function recipeTestContext(
  config: RunConfig,
  llm: LlmCaller | ((role: string) => LlmCaller),
  options: { state?: unknown; iteration?: number; shard?: number } = {},
): RecipeContext {
  return {
    config,
    runId: 'unit',
    iteration: options.iteration ?? 1,
    shard: options.shard ?? 0,
    policyVersion: 0,
    llm: typeof llm === 'function' ? llm : () => llm,
    signal: new AbortController().signal,
    state: options.state,
  };
}
