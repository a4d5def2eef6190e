import { stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { firstIssue, startEngineServer, type FakeEngine } from './engine-server';

/**
 * SGLang's disk reload as weight sync uses it: `POST /update_weights_from_disk` with the fields of
 * `UpdateWeightFromDiskReqInput` (typed as SGLang types them: weight_version is a string), a model directory
 * that must exist, `{success, message}` answers (400 when success is false), and `GET /get_weight_version`.
 */

export interface FakeSglangState {
  /** What `/get_weight_version` reports; a fresh server reports "default". */
  weightVersion: string;
  modelPath: string;
  /** Loads answer success but the weights and version stay. */
  staleAfterLoad: boolean;
  /** Loads fail with `{success: false, message}`. */
  failure?: string;
}

export interface FakeSglang extends FakeEngine {
  state: FakeSglangState;
}

const updateSchema = z.strictObject({
  model_path: z.string().min(1),
  load_format: z.string().nullable().optional(),
  abort_all_requests: z.boolean().optional(),
  weight_version: z.string().nullable().optional(),
  is_async: z.boolean().optional(),
  torch_empty_cache: z.boolean().optional(),
  keep_pause: z.boolean().optional(),
  recapture_cuda_graph: z.boolean().optional(),
  token_step: z.number().int().optional(),
  flush_cache: z.boolean().optional(),
});

async function isModelDir(dir: string): Promise<boolean> {
  try {
    return path.isAbsolute(dir) && (await stat(path.join(dir, 'config.json'))).isFile();
  } catch {
    return false;
  }
}

export async function startFakeSglang(weightVersion = 'default'): Promise<FakeSglang> {
  const state: FakeSglangState = { weightVersion, modelPath: '/models/base', staleAfterLoad: false };
  const failed = (message: string): { status: number; json: unknown } => ({
    status: 400,
    json: { success: false, message, num_paused_requests: 0 },
  });
  const engine = await startEngineServer(async ({ method, path: route, body }) => {
    if (method === 'GET' && route === '/get_weight_version') {
      return { status: 200, json: { weight_version: state.weightVersion } };
    }
    if (method === 'POST' && route === '/update_weights_from_disk') {
      const parsed = updateSchema.safeParse(body);
      if (!parsed.success) {
        const message = firstIssue(parsed.error);
        return {
          status: 400,
          json: { object: 'error', message, type: 'Bad Request', param: null, code: 400 },
        };
      }
      const request = parsed.data;
      if (state.failure) return failed(state.failure);
      if (!(await isModelDir(request.model_path))) {
        return failed(`Failed to update weights: no model (config.json) at ${request.model_path}`);
      }
      let message = 'Succeeded to update model weights.';
      if (!state.staleAfterLoad) {
        state.modelPath = request.model_path;
        if (request.weight_version != null) {
          state.weightVersion = request.weight_version;
          message += ` Weight version updated to ${request.weight_version}.`;
        }
      }
      return { status: 200, json: { success: true, message, num_paused_requests: 0 } };
    }
    return undefined;
  });
  return Object.assign(engine, { state });
}
