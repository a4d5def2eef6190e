import { stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { errorBody, firstIssue, startEngineServer, type FakeEngine } from './engine-server';

/**
 * vLLM's runtime LoRA API as weight sync uses it: `POST /v1/load_lora_adapter {lora_name, lora_path}`
 * (a PEFT directory that must exist; a name already loaded is refused, as vLLM does),
 * `POST /v1/unload_lora_adapter {lora_name}` and `GET /v1/models` listing the base model and the adapters.
 * With an `upstream`, it also samples: `POST /v1/chat/completions` for a loaded adapter is answered by the
 * upstream (the scripted LLM) and recorded with the adapter's path then; any other model is a 404, as vLLM's.
 */

export interface FakeVllmState {
  /** Loaded adapters: name -> path. */
  adapters: Map<string, string>;
  /** Loads answer "Success" but nothing is added. */
  staleAfterLoad: boolean;
  /** The next N loads take effect but answer 503, as when a proxy loses the answer. */
  lostAnswers: number;
  /** Every chat completion request (with an `upstream`): the model asked for, and the adapter's path then. */
  completions: Array<{ model: string; path?: string }>;
}

export interface FakeVllmOptions {
  adapters?: Record<string, string>;
  /** False: started without VLLM_ALLOW_RUNTIME_LORA_UPDATING, so the LoRA routes do not exist. */
  runtimeLoraUpdating?: boolean;
  /** Where completions of loaded adapters are answered: an OpenAI base URL and the model it serves. */
  upstream?: { url: string; model: string };
}

export interface FakeVllm extends FakeEngine {
  state: FakeVllmState;
}

const BASE_MODEL = 'Qwen/Qwen3-4B';
const loadSchema = z.strictObject({ lora_name: z.string().min(1), lora_path: z.string().min(1) });
const unloadSchema = z.strictObject({
  lora_name: z.string().min(1),
  lora_int_id: z.number().int().optional(),
});

async function isPeftDir(dir: string): Promise<boolean> {
  try {
    return path.isAbsolute(dir) && (await stat(path.join(dir, 'adapter_config.json'))).isFile();
  } catch {
    return false;
  }
}

export async function startFakeVllm(options: FakeVllmOptions = {}): Promise<FakeVllm> {
  const state: FakeVllmState = {
    adapters: new Map(Object.entries(options.adapters ?? {})),
    staleAfterLoad: false,
    lostAnswers: 0,
    completions: [],
  };
  const { upstream } = options;
  const loraRoutes = options.runtimeLoraUpdating ?? true;
  const engine = await startEngineServer(async ({ method, path: route, body, headers }) => {
    if (method === 'GET' && route === '/v1/models') {
      const card = (id: string, root: string, parent: string | null): unknown => ({
        id,
        object: 'model',
        owned_by: 'vllm',
        root,
        parent,
      });
      const adapters = [...state.adapters].map(([name, dir]) => card(name, dir, BASE_MODEL));
      return {
        status: 200,
        json: { object: 'list', data: [card(BASE_MODEL, BASE_MODEL, null), ...adapters] },
      };
    }
    if (method === 'POST' && route === '/v1/chat/completions' && upstream) {
      const model = (body as { model?: unknown }).model;
      const path = typeof model === 'string' ? state.adapters.get(model) : undefined;
      state.completions.push({ model: String(model), ...(path ? { path } : {}) });
      if (!path) {
        return {
          status: 404,
          json: errorBody(`The model \`${String(model)}\` does not exist.`, 'NotFoundError'),
        };
      }
      const res = await fetch(`${upstream.url}/chat/completions`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ ...(body as object), model: upstream.model }),
      });
      return { status: res.status, json: await res.json() };
    }
    if (method === 'POST' && route === '/v1/load_lora_adapter' && loraRoutes) {
      const parsed = loadSchema.safeParse(body);
      if (!parsed.success) return { status: 400, json: errorBody(firstIssue(parsed.error)) };
      const { lora_name: name, lora_path: dir } = parsed.data;
      if (state.adapters.has(name)) {
        return { status: 400, json: errorBody(`The lora adapter '${name}' has already been loaded.`) };
      }
      if (!(await isPeftDir(dir))) {
        return {
          status: 404,
          json: errorBody(`Loading lora ${name} failed: No adapter found for ${dir}`, 'NotFoundError'),
        };
      }
      if (!state.staleAfterLoad) state.adapters.set(name, dir);
      if (state.lostAnswers > 0) {
        state.lostAnswers--;
        return { status: 503, json: errorBody('upstream connect error') };
      }
      return { status: 200, text: `Success: LoRA adapter '${name}' added successfully.` };
    }
    if (method === 'POST' && route === '/v1/unload_lora_adapter' && loraRoutes) {
      const parsed = unloadSchema.safeParse(body);
      if (!parsed.success) return { status: 400, json: errorBody(firstIssue(parsed.error)) };
      const name = parsed.data.lora_name;
      if (!state.adapters.delete(name)) {
        return {
          status: 404,
          json: errorBody(`The lora adapter '${name}' cannot be found.`, 'NotFoundError'),
        };
      }
      return { status: 200, text: `Success: LoRA adapter '${name}' removed successfully.` };
    }
    return undefined;
  });
  return Object.assign(engine, { state });
}
