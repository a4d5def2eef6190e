import { z } from 'zod';
import { errorBody, firstIssue, startEngineServer, type FakeEngine } from './engine-server';

/**
 * The kernel's sampler as weight sync sees it: one policy, `POST /v1/sampler/load {uri, version}` (nothing
 * else in the body) and `GET /v1/models` reporting `weight_version` on the policy's entry.
 */

export interface FakeKernelSamplerState {
  /** The version served; undefined before any load. */
  version: number | undefined;
  /** Loads answer 200 but change nothing: a sampler that reports stale weights. */
  staleAfterLoad: boolean;
  /** Loads are refused with this 4xx. */
  refusal?: { status: number; message: string };
}

export interface FakeKernelSampler extends FakeEngine {
  state: FakeKernelSamplerState;
}

const loadSchema = z.strictObject({ uri: z.string().min(1), version: z.number().int().nonnegative() });

export async function startFakeKernelSampler(policy: string, version?: number): Promise<FakeKernelSampler> {
  const state: FakeKernelSamplerState = { version, staleAfterLoad: false };
  const engine = await startEngineServer(({ method, path, body }) => {
    if (method === 'GET' && path === '/v1/models') {
      const entry = { id: policy, object: 'model', owned_by: 'selfplay-kernel' };
      return {
        status: 200,
        json: {
          object: 'list',
          data: [state.version === undefined ? entry : { ...entry, weight_version: state.version }],
        },
      };
    }
    if (method === 'POST' && path === '/v1/sampler/load') {
      const parsed = loadSchema.safeParse(body);
      if (!parsed.success)
        return { status: 400, json: errorBody(firstIssue(parsed.error), 'invalid_request') };
      if (state.refusal) {
        return { status: state.refusal.status, json: errorBody(state.refusal.message, 'refused') };
      }
      if (!state.staleAfterLoad) state.version = parsed.data.version;
      return { status: 200, json: { policy, weight_version: state.version } };
    }
    return undefined;
  });
  return Object.assign(engine, { state });
}
