import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { z } from 'zod';
import type {
  CheckpointResponse,
  PublishResponse,
  PolicyState,
  TrainerError,
  TrainProgress,
  TrainingRow,
  TrainStepMetrics,
  TrainStepRequest,
  TrainStepResponse,
} from '../../../activities/clients/trainer-contract';
import { BodyError, closer, fieldPath, listen, readJson, sendJson } from '../http-json';
import { loadBatch, TrainerRefusal } from './batch';
import { checkpointMarker, readCheckpoint, writeOrStorageFull } from './checkpoint';
import {
  checkpointRequestSchema,
  publishRequestSchema,
  restoreRequestSchema,
  trainStepRequestSchema,
} from './schemas';
import {
  emptyState,
  loadState,
  saveState,
  survivingSteps,
  type StepRecord,
  type TrainerState,
} from './state';

/**
 * The training kernel's HTTP contract with the GPU work left out: it checks every request and batch as
 * strictly as the kernel must, applies each idempotency key at most once (across its own restarts, given a
 * state file), and records what it was asked, so a test can prove that no step was lost or applied twice.
 */

export interface RecordingTrainerOptions {
  /** Where to persist versions and applied keys; without it the trainer forgets everything on close. */
  stateFile?: string;
  /** Reads a batch object by its URI (the tests read local files; the CLI reads file:// and s3://). */
  readBatch: (uri: string) => Promise<Buffer>;
  /** Writes checkpoint and snapshot objects; without it those endpoints answer 501. */
  writeObject?: (uri: string, body: string) => Promise<void>;
  /**
   * Awaited when a checkpoint, restore or publish request has arrived, before it takes effect (with the
   * policy's version then), so a test can hold one in flight and crash its caller without timing anything.
   */
  beforeAction?: (action: StateAction, policy: string, version: number) => Promise<void>;
  /** 0 (the default) lets the OS pick a free port. */
  port?: number;
  host?: string;
  /**
   * Awaited before a new step is applied, one step at a time as the steps themselves: a simulated training
   * and weight-sync time (bench/pipeline.ts), or a test's gate that holds a step until something happened.
   */
  beforeStep?: (step: { runId: string; iteration: number; policy: string }) => Promise<void>;
  /**
   * Awaited while a step trains, after its batch is read: `trained(rows)` sets the rows that
   * `GET /v1/train/progress` reports, as a kernel counts its micro-batches, so a test can move a step along
   * and hold it between reports.
   */
  duringStep?: (step: { policy: string; rows: number }, trained: (rows: number) => void) => Promise<void>;
  /**
   * What a publish writes: `full` (the default) a `snapshot.json` descriptor, `lora` a PEFT
   * `adapter_config.json` that also names the snapshot's URI, so a fake vLLM can load it and a test can tell
   * whose snapshot an adapter is.
   */
  snapshotFormat?: 'full' | 'lora';
  /**
   * A publish answers a digest of the policy's "weights" (its version and the keys of the steps applied to it)
   * and writes it in the marker, as the kernel does; without it, none, as kernels from before digests.
   */
  publishDigests?: boolean;
}

export interface RecordingTrainerStats {
  appliedSteps: number;
  /** How many times each key was applied, a restore's re-applications included. */
  appliedByKey: Record<string, number>;
  /**
   * How many times each key's application survives in the weights (no restore rolled it back): anything but 1
   * for a committed step is a step applied twice, or lost, whatever restores happened between.
   */
  survivingByKey: Record<string, number>;
  /** POST /v1/train/step requests received (since this process started). */
  requests: number;
  /** Requests answered with an earlier key's first response. */
  duplicates: number;
  /** Requests refused with an error. */
  rejected: number;
  steps: StepRecord[];
  /** Checkpoints restored since this process started. */
  restores: Array<{ policy: string; uri: string; version: number }>;
}

export interface RecordingTrainer {
  url: string;
  port: number;
  stats(): RecordingTrainerStats;
  close(): Promise<void>;
}

export type StateAction = 'checkpoint' | 'restore' | 'publish';

const BODY_LIMIT_BYTES = 1024 * 1024;

const ACTION_BODIES = {
  checkpoint: checkpointRequestSchema,
  restore: restoreRequestSchema,
  publish: publishRequestSchema,
} satisfies Record<StateAction, z.ZodType>;

/** The body as the contract's `schema` has it, or a 400 naming the first bad field, as the kernel answers. */
function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const message = `${fieldPath(issue?.path ?? [])}: ${issue?.message ?? 'invalid request'}`;
  throw new TrainerRefusal(400, 'invalid_request', message);
}

function metricsOf(rows: readonly TrainingRow[], startedMs: number): TrainStepMetrics {
  const mean = (values: number[]): number => values.reduce((sum, v) => sum + v, 0) / values.length;
  const advantages = rows.map((r) => r.advantage);
  const retokenized = rows.filter((r) => r.completionTokens === undefined).length;
  return {
    loss: -mean(advantages),
    kl: 0,
    clipFraction: 0,
    gradNorm: Math.sqrt(mean(advantages.map((a) => a * a))),
    tokens: Math.round(rows.reduce((sum, r) => sum + r.completion.length, 0) / 4),
    seconds: (performance.now() - startedMs) / 1000,
    rowsRetokenized: retokenized,
    tokenExactFraction: (rows.length - retokenized) / rows.length,
  };
}

function recordOf(request: TrainStepRequest, rows: readonly TrainingRow[]): StepRecord {
  const roles: Record<string, number> = {};
  for (const row of rows) roles[row.role] = (roles[row.role] ?? 0) + 1;
  const { idempotencyKey: key, runId, iteration, policy, baseVersion } = request;
  return { key, runId, iteration, policy, baseVersion, rows: rows.length, roles };
}

function countByKey(steps: readonly StepRecord[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const s of steps) counts[s.key] = (counts[s.key] ?? 0) + 1;
  return counts;
}

const sendError = (res: ServerResponse, status: number, type: string, message: string): void =>
  sendJson(res, status, { error: { type, message } } satisfies TrainerError);

export async function startRecordingTrainer(options: RecordingTrainerOptions): Promise<RecordingTrainer> {
  const {
    stateFile,
    readBatch,
    writeObject,
    beforeStep,
    duringStep,
    beforeAction,
    snapshotFormat = 'full',
    publishDigests = false,
    port: wantedPort = 0,
    host = '127.0.0.1',
  } = options;
  let state: TrainerState = stateFile ? await loadState(stateFile) : emptyState();
  let requests = 0;
  let duplicates = 0;
  let rejected = 0;
  // Steps run one at a time, as on a real trainer; it also makes "check the key, then apply" atomic.
  let queue: Promise<unknown> = Promise.resolve();
  /** The step in training, as GET /v1/train/progress reports it (one mini-batch: the whole batch). */
  let running: TrainProgress | null = null;

  const step = async (body: unknown): Promise<TrainStepResponse> => {
    const request = parseBody(trainStepRequestSchema, body);
    const first = state.responses[request.idempotencyKey];
    if (first) {
      duplicates++;
      return { ...first, applied: false };
    }
    const current = state.versions[request.policy] ?? 0;
    if (request.baseVersion !== current) {
      throw new TrainerRefusal(
        409,
        'version_conflict',
        `baseVersion: the batch was sampled from version ${request.baseVersion} of policy "${request.policy}", ` +
          `which is at version ${current}`,
      );
    }
    const started = performance.now();
    await beforeStep?.(request);
    const rows = await loadBatch(request.batch, readBatch);
    if (duringStep) {
      const { idempotencyKey, policy } = request;
      const step = { idempotencyKey, miniBatches: 1, miniBatchesDone: 0, rows: rows.length, rowsTrained: 0 };
      running = { object: 'train.progress', policy, step };
      await duringStep({ policy, rows: rows.length }, (trained) => {
        step.rowsTrained = trained;
      }).finally(() => (running = null));
    }
    const response: TrainStepResponse = {
      idempotencyKey: request.idempotencyKey,
      applied: true,
      policyVersion: current + 1,
      metrics: metricsOf(rows, started),
    };
    const next: TrainerState = {
      versions: { ...state.versions, [request.policy]: current + 1 },
      responses: { ...state.responses, [request.idempotencyKey]: response },
      steps: [...state.steps, recordOf(request, rows)],
    };
    if (stateFile) await saveState(stateFile, next);
    state = next;
    return response;
  };

  /**
   * Checkpoints, restores and snapshots, recorded rather than real: a checkpoint is the policy's version
   * and its applied keys (plus a COMPLETE marker naming its sha256, written last), a snapshot a small
   * descriptor. Restore reads both back, refusing bytes other than those written (checkpoint.ts).
   */
  const stateAction = async (
    kind: StateAction,
    policy: string,
    body: { uri: string; version?: number | null },
  ) => {
    await beforeAction?.(kind, policy, state.versions[policy] ?? 0);
    if (!writeObject) throw new TrainerRefusal(501, 'not_implemented', `${kind} needs a writeObject option`);
    const current = state.versions[policy] ?? 0;
    const base = body.uri.replace(/\/+$/, '');
    if (kind === 'restore') {
      const saved = await readCheckpoint(readBatch, base);
      const version = saved.policyVersion;
      // As the kernel's restore: the keys applied after the checkpoint are forgotten with their weights.
      const ownKeys = new Set(state.steps.filter((s) => s.policy === policy).map((s) => s.key));
      const responses = Object.fromEntries(
        Object.entries(state.responses).filter(([key]) => !ownKeys.has(key)),
      );
      const next: TrainerState = {
        versions: { ...state.versions, [policy]: version },
        responses: { ...responses, ...saved.responses },
        steps: state.steps.map((s) =>
          s.policy === policy && s.baseVersion >= version ? { ...s, rolledBack: true } : s,
        ),
      };
      if (stateFile) await saveState(stateFile, next);
      state = next;
      restores.push({ policy, uri: base, version });
      return { policy, policyVersion: version } satisfies PolicyState;
    }
    if (kind === 'publish' && body.version !== current) {
      throw new TrainerRefusal(
        409,
        'version_conflict',
        `version: policy "${policy}" is at version ${current}, not ${String(body.version)}`,
      );
    }
    const lora = kind === 'publish' && snapshotFormat === 'lora';
    const file = kind === 'checkpoint' ? 'state.json' : lora ? 'adapter_config.json' : 'snapshot.json';
    const described = {
      policy,
      policyVersion: current,
      ...(kind === 'checkpoint' ? { responses: responsesOf(policy) } : {}),
      ...(lora ? { peft_type: 'LORA', uri: base } : {}),
    };
    const text = JSON.stringify(described);
    const sha256 = kind === 'publish' && publishDigests ? weightsDigest(policy, current) : undefined;
    const marker =
      kind === 'checkpoint'
        ? JSON.stringify(checkpointMarker(policy, current, text))
        : sha256
          ? JSON.stringify({ policy, policyVersion: current, sha256 })
          : '';
    await writeOrStorageFull(async () => {
      await writeObject(`${base}/${file}`, text);
      await writeObject(`${base}/COMPLETE`, marker);
    });
    return kind === 'checkpoint'
      ? ({ uri: base, policyVersion: current, bytes: 0 } satisfies CheckpointResponse)
      : ({
          uri: base,
          policyVersion: current,
          format: snapshotFormat,
          ...(sha256 ? { sha256 } : {}),
        } satisfies PublishResponse);
  };
  const restores: Array<{ policy: string; uri: string; version: number }> = [];
  /** What stands for the policy's weights: its version and the steps applied to it, in order. */
  const weightsDigest = (policy: string, version: number): string =>
    createHash('sha256')
      .update(
        JSON.stringify([
          policy,
          version,
          survivingSteps(state.steps)
            .filter((s) => s.policy === policy)
            .map((s) => s.key),
        ]),
      )
      .digest('hex');
  /** The first responses to the keys applied to `policy`: kept by a checkpoint, as the kernel's state.json. */
  const responsesOf = (policy: string): Record<string, TrainStepResponse> =>
    Object.fromEntries(
      state.steps.flatMap((s) => {
        const response = s.policy === policy ? state.responses[s.key] : undefined;
        return response ? [[s.key, response] as const] : [];
      }),
    );

  /**
   * What a kernel's restart loses (its state file stands for checkpoints that survive it, not for weights in
   * memory): every policy back at version 0 with no applied keys, so the next update restores from the
   * committed checkpoint. The record of steps stays: it is the audit's, not the kernel's.
   */
  const forget = async (): Promise<PolicyState[]> => {
    const next: TrainerState = { ...state, versions: {}, responses: {} };
    if (stateFile) await saveState(stateFile, next);
    const forgotten = Object.keys(state.versions).map((policy) => ({ policy, policyVersion: 0 }));
    state = next;
    return forgotten;
  };

  const serially = <T>(work: () => Promise<T>): Promise<T> => {
    const run = queue.then(work);
    queue = run.catch(() => undefined);
    return run;
  };

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const method = req.method ?? 'GET';
    if (method === 'POST' && path === '/v1/train/step') {
      requests++;
      try {
        const body = await readJson(req, BODY_LIMIT_BYTES);
        return sendJson(res, 200, await serially(() => step(body)));
      } catch (err) {
        rejected++;
        throw err;
      }
    }
    const action = /^\/v1\/policies\/([^/]+)\/(checkpoint|restore|publish)$/.exec(path);
    if (method === 'POST' && action) {
      const kind = action[2] as StateAction;
      const body = parseBody(ACTION_BODIES[kind], await readJson(req, BODY_LIMIT_BYTES));
      const name = decodeURIComponent(action[1] as string);
      return sendJson(res, 200, await serially(() => stateAction(kind, name, body)));
    }
    const policy = /^\/v1\/policies\/([^/]+)$/.exec(path)?.[1];
    if (method === 'GET' && policy !== undefined) {
      const name = decodeURIComponent(policy);
      return sendJson(res, 200, {
        policy: name,
        policyVersion: state.versions[name] ?? 0,
      } satisfies PolicyState);
    }
    if (method === 'GET' && path === '/v1/train/progress') {
      return sendJson(
        res,
        200,
        running ?? ({ object: 'train.progress', policy: '', step: null } satisfies TrainProgress),
      );
    }
    if (method === 'GET' && path === '/admin/stats') return sendJson(res, 200, stats());
    if (method === 'POST' && path === '/admin/forget') return sendJson(res, 200, await serially(forget));
    return sendError(res, 404, 'not_found', `no route for ${method} ${path}`);
  };

  const stats = (): RecordingTrainerStats => {
    return {
      appliedSteps: state.steps.length,
      appliedByKey: countByKey(state.steps),
      survivingByKey: countByKey(survivingSteps(state.steps)),
      requests,
      duplicates,
      rejected,
      steps: [...state.steps],
      restores: [...restores],
    };
  };

  const server = createServer((req, res) => {
    route(req, res).catch((err: unknown) => {
      if (err instanceof TrainerRefusal) sendError(res, err.status, err.type, err.message);
      else if (err instanceof BodyError) sendError(res, err.status, 'invalid_request', err.message);
      else sendError(res, 500, 'internal', err instanceof Error ? err.message : String(err));
    });
  });
  const port = await listen(server, wantedPort, host);
  return { url: `http://${host}:${port}`, port, stats, close: closer(server) };
}
