import { resolveRunConfig, type RunConfig } from '../../config/schema';
import {
  InferenceEndpoint,
  type ChatRequest,
  type ChatSample,
  type LlmCaller,
} from '../../activities/clients/inference';
import type { RecipeContext } from '../../activities/recipes/types';
import type { Retriever } from '../../activities/tools/types';

/** The resolved run config for these fields (`recipe` among them); throws what the schema refuses. */
export function configFor(overrides: Record<string, unknown>): RunConfig {
  const r = resolveRunConfig(overrides);
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.config;
}

/** The project's inference client against a scripted LLM server (scripted-llm/server.ts), as a worker uses it. */
export const scriptedEndpoint = (server: { url: string }): InferenceEndpoint =>
  new InferenceEndpoint({
    baseUrl: server.url,
    model: 'scripted-policy',
    apiKey: 'EMPTY',
    maxConcurrentCompletions: 16,
    supportsN: true,
    requestTimeoutMs: 10_000,
    maxRetries: 2,
  });

/** An LLM giving `answer(req, i, nth)` for sample i of the nth (from 0) request of its kind; logs `calls`. */
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

/**
 * A stage context: run "unit", iteration 1, shard 0, no state or retriever unless given; `llm` for all or
 * per role. Unit parts (trajectory checkpoints, verifications) live in `options.parts` (keyed `unit/name`; a
 * fresh map unless given), so a test can build a second context on the same map to play a retried shard.
 */
export function recipeTestContext(
  config: RunConfig,
  llm: LlmCaller | ((role: string) => LlmCaller),
  options: {
    state?: unknown;
    iteration?: number;
    shard?: number;
    retriever?: Retriever;
    parts?: Map<string, unknown>;
  } = {},
): RecipeContext {
  const { retriever } = options;
  const parts = options.parts ?? new Map<string, unknown>();
  return {
    config,
    runId: 'unit',
    iteration: options.iteration ?? 1,
    shard: options.shard ?? 0,
    versions: { policy: 0 },
    llm: typeof llm === 'function' ? llm : () => llm,
    retriever: () =>
      retriever
        ? Promise.resolve(retriever)
        : Promise.reject(new Error('this test context has no retriever: pass options.retriever')),
    unitPart: <T>(unit: number, name: string) => ({
      load: () => Promise.resolve(structuredClone(parts.get(`${unit}/${name}`) as T | undefined)),
      save: (value: T) => {
        parts.set(`${unit}/${name}`, structuredClone(value));
        return Promise.resolve();
      },
    }),
    signal: new AbortController().signal,
    state: options.state,
  };
}
