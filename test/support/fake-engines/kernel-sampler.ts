import { z } from 'zod';
import { errorBody, firstIssue, startEngineServer, type FakeEngine } from './engine-server';

/**
 * The kernel's sampler as weight sync sees it: one policy, `POST /v1/sampler/load {uri, version, lineage?}`
 * (and `pin`, `sha256`; nothing else in the body; 409 `lineage_conflict` for another run than the one whose
 * weights it serves, as the kernel's lineage.py) and `GET /v1/models` reporting `weight_version`, `lineage`,
 * `pinned` and `weight_digest` (the pinned copy's digest, as the load named it) on the policy's entry.
 */

export interface FakeKernelSamplerState {
  /** The version served; undefined before any load. */
  version: number | undefined;
  /** Loads answer 200 but change nothing: a sampler that reports stale weights. */
  staleAfterLoad: boolean;
  /** Loads are refused with this 4xx (error type `refused` unless given). */
  refusal?: { status: number; message: string; type?: string };
  /** The run whose weights it serves; undefined: no one's (base weights, or loaded without a run). */
  lineage?: string;
  /** Whether it serves a pinned copy of a snapshot; false: the trainer's live weights (before any pinned load). */
  pinned: boolean;
  /** The digest of the pinned copy's weights, as its load named it. */
  digest?: string;
}

export interface FakeKernelSampler extends FakeEngine {
  state: FakeKernelSamplerState;
}

const loadSchema = z.strictObject({
  uri: z.string().min(1),
  version: z.number().int().nonnegative(),
  lineage: z.string().min(1).optional(),
  pin: z.boolean().optional(),
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
});
const runOf = (lineage: string): string => lineage.replace(/\.r\d+$/, '');

export async function startFakeKernelSampler(policy: string, version?: number): Promise<FakeKernelSampler> {
  const state: FakeKernelSamplerState = { version, staleAfterLoad: false, pinned: false };
  const engine = await startEngineServer(({ method, path, body }) => {
    if (method === 'GET' && path === '/v1/models') {
      const entry = {
        id: policy,
        object: 'model',
        owned_by: 'selfplay-kernel',
        lineage: state.lineage ?? null,
        pinned: state.pinned,
        weight_digest: state.pinned ? (state.digest ?? null) : null,
      };
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
        return {
          status: state.refusal.status,
          json: errorBody(state.refusal.message, state.refusal.type ?? 'refused'),
        };
      }
      const { lineage } = parsed.data;
      if (lineage && state.lineage && runOf(lineage) !== runOf(state.lineage)) {
        const message = `lineage: this sampler serves run '${state.lineage}''s weights; give each run its own sampler`;
        return { status: 409, json: errorBody(message, 'lineage_conflict') };
      }
      if (!state.staleAfterLoad) {
        [state.version, state.lineage, state.pinned, state.digest] = [
          parsed.data.version,
          lineage,
          parsed.data.pin === true,
          parsed.data.sha256,
        ];
      }
      return { status: 200, json: { policy, weight_version: state.version } };
    }
    return undefined;
  });
  return Object.assign(engine, { state });
}
