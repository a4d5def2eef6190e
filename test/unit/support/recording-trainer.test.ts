import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import type {
  TrainingRow,
  TrainProgress,
  TrainStepRequest,
  TrainStepResponse,
} from '../../../activities/clients/trainer-contract';
import { startRecordingTrainer, type RecordingTrainer } from '../../support/recording-trainer/server';

let dir: string;
let trainer: RecordingTrainer | undefined;
/** The trainer under test: in-process, or the CLI's process. */
let baseUrl: string;
const readBatch = (uri: string): Promise<Buffer> => readFile(fileURLToPath(uri));

async function start(stateFile?: string): Promise<RecordingTrainer> {
  await trainer?.close();
  trainer = await startRecordingTrainer({ readBatch, ...(stateFile ? { stateFile } : {}) });
  baseUrl = trainer.url;
  return trainer;
}

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'recording-trainer-'));
});
afterEach(async () => {
  await trainer?.close();
  trainer = undefined;
  await rm(dir, { recursive: true, force: true });
});

const row = (
  role: string,
  advantage: number,
  completion = 'The final answer is \\boxed{42}.',
): TrainingRow => ({
  messages: [{ role: 'user', content: 'What is 6 * 7?' }],
  completion,
  role,
  group: `${role}/doc-0001`,
  reward: advantage > 0 ? 1 : 0,
  advantage,
});

const ROWS = [row('challenger', 0.5), row('challenger', -0.5), row('reasoner', 0.25, 'x'.repeat(40))];

const jsonl = (lines: readonly unknown[]): string =>
  lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n';

/** What the CLI's trainer does with checkpoint objects, for file:// URIs. */
async function writeFileAtUri(uri: string, body: string): Promise<void> {
  const file = fileURLToPath(uri);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, body);
}

/** POST /v1/policies/policy/{kind} (checkpoint, restore, publish). */
async function policyAction(kind: string, body: object): Promise<{ status: number; json: StepReply }> {
  const response = await fetch(`${baseUrl}/v1/policies/policy/${kind}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as StepReply };
}

/** Stores the bytes and returns the batch reference the update stage would send. */
async function writeObject(name: string, bytes: Buffer, rows: number): Promise<TrainStepRequest['batch']> {
  const file = path.join(dir, name);
  await writeFile(file, bytes);
  return { uri: pathToFileURL(file).href, rows, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** Writes the batch as the update stage would: JSONL, gzipped when the name ends in .gz. */
const writeBatch = (name: string, lines: readonly unknown[]): Promise<TrainStepRequest['batch']> =>
  writeObject(name, name.endsWith('.gz') ? gzipSync(jsonl(lines)) : Buffer.from(jsonl(lines)), lines.length);

function stepRequest(
  batch: TrainStepRequest['batch'],
  iteration: number,
  baseVersion: number,
): TrainStepRequest {
  return {
    idempotencyKey: `run-1/iter-${iteration}/policy`,
    runId: 'run-1',
    iteration,
    policy: 'policy',
    baseVersion,
    batch,
    loss: {
      type: 'ppo_clip',
      normalization: 'dr_grpo',
      normalizerConstant: 3000,
      clipLow: 0.2,
      clipHigh: 0.2,
      klCoef: 0,
    },
    optimizer: { learningRate: 1e-6, schedule: 'constant', warmupSteps: 0, maxGradNorm: 1, weightDecay: 0 },
  };
}

/** A step's answer: the response, or the contract's error body. */
type StepReply = Partial<TrainStepResponse> & { error?: { type: string; message: string } };

async function post(body: unknown): Promise<{ status: number; json: StepReply }> {
  const res = await fetch(`${baseUrl}/v1/train/step`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as StepReply };
}

async function policyVersion(policy = 'policy'): Promise<number> {
  const res = await fetch(`${baseUrl}/v1/policies/${encodeURIComponent(policy)}`);
  const body = (await res.json()) as { policy: string; policyVersion: number };
  expect(body.policy).toBe(policy);
  return body.policyVersion;
}

describe('recording trainer', () => {
  test('applies a step: version +1, plausible metrics, and a record of what it trained on', async () => {
    trainer = await start();
    expect(await policyVersion()).toBe(0);
    const batch = await writeBatch('batch.jsonl.gz', ROWS);
    const { status, json } = await post(stepRequest(batch, 0, 0));
    expect(status).toBe(200);
    expect(json).toMatchObject({ idempotencyKey: 'run-1/iter-0/policy', applied: true, policyVersion: 1 });
    const meanAdvantage = (0.5 - 0.5 + 0.25) / 3;
    expect(json.metrics?.loss).toBeCloseTo(-meanAdvantage);
    const chars = ROWS.reduce((sum, r) => sum + r.completion.length, 0);
    expect(json.metrics?.tokens).toBe(Math.round(chars / 4));
    expect(json.metrics?.seconds).toBeGreaterThanOrEqual(0);
    expect(await policyVersion()).toBe(1);
    expect(await policyVersion('someone/else')).toBe(0);
    expect(trainer.stats()).toMatchObject({
      appliedSteps: 1,
      appliedByKey: { 'run-1/iter-0/policy': 1 },
      steps: [
        {
          key: 'run-1/iter-0/policy',
          iteration: 0,
          policy: 'policy',
          rows: 3,
          roles: { challenger: 2, reasoner: 1 },
        },
      ],
    });
  });

  test('a repeated key returns the first response with applied:false and changes nothing', async () => {
    trainer = await start();
    const request = stepRequest(await writeBatch('batch.jsonl', ROWS), 0, 0);
    const first = await post(request);
    const again = await post(request);
    expect(again.status).toBe(200);
    expect(again.json).toEqual({ ...first.json, applied: false });
    expect(await policyVersion()).toBe(1);
    // Concurrent retries of a new key: exactly one applies.
    const next = stepRequest(request.batch, 1, 1);
    const replies = await Promise.all(Array.from({ length: 5 }, () => post(next)));
    expect(replies.map((r) => r.json.applied).sort()).toEqual([false, false, false, false, true]);
    expect(await policyVersion()).toBe(2);
    expect(trainer.stats()).toMatchObject({
      appliedSteps: 2,
      appliedByKey: { 'run-1/iter-0/policy': 1, 'run-1/iter-1/policy': 1 },
      requests: 7,
      duplicates: 5,
      rejected: 0,
    });
  });

  test('refuses a batch sampled from another version with 409, unless the key was applied before', async () => {
    trainer = await start();
    const batch = await writeBatch('batch.jsonl.gz', ROWS);
    await post(stepRequest(batch, 0, 0));
    const stale = await post(stepRequest(batch, 1, 0));
    expect(stale.status).toBe(409);
    expect(stale.json.error?.type).toBe('version_conflict');
    expect(stale.json.error?.message).toMatch(/^baseVersion: .*version 1/);
    const replayed = await post(stepRequest(batch, 0, 0));
    expect(replayed).toMatchObject({ status: 200, json: { applied: false, policyVersion: 1 } });
    expect(trainer.stats()).toMatchObject({ appliedSteps: 1, rejected: 1 });
  });

  test('a restore forgets the keys applied after its checkpoint, as the kernel does: that step applies again', async () => {
    await trainer?.close();
    trainer = await startRecordingTrainer({ readBatch, writeObject: writeFileAtUri });
    baseUrl = trainer.url;
    const action = async (kind: string, body: object): Promise<unknown> =>
      (await policyAction(kind, body)).json;
    const batch = await writeBatch('batch.jsonl', ROWS);
    const checkpoint = pathToFileURL(path.join(dir, 'checkpoint-v1')).href;
    await post(stepRequest(batch, 1, 0));
    await action('checkpoint', { uri: checkpoint, version: 1 });
    const second = stepRequest(batch, 2, 1);
    expect((await post(second)).json).toMatchObject({ applied: true, policyVersion: 2 });
    expect(await action('restore', { uri: checkpoint })).toMatchObject({ policyVersion: 1 });
    // The checkpoint's own step is still answered; the later one went with its weights and is applied anew.
    expect((await post(stepRequest(batch, 1, 0))).json).toMatchObject({ applied: false, policyVersion: 1 });
    expect((await post(second)).json).toMatchObject({ applied: true, policyVersion: 2 });
    expect(trainer.stats().appliedByKey).toEqual({ 'run-1/iter-1/policy': 1, 'run-1/iter-2/policy': 2 });
    // The first application went with the weights the restore discarded: in the weights, each key once.
    expect(trainer.stats().survivingByKey).toEqual({ 'run-1/iter-1/policy': 1, 'run-1/iter-2/policy': 1 });
    expect(trainer.stats().steps.map((s) => s.rolledBack ?? false)).toEqual([false, true, false]);

    // A restart as the kernel's loses the weights (version 0, no keys) but not the record of steps.
    const forgotten = await fetch(`${baseUrl}/admin/forget`, { method: 'POST' });
    expect(await forgotten.json()).toEqual([{ policy: 'policy', policyVersion: 0 }]);
    expect(await policyVersion()).toBe(0);
    expect((await post(second)).status).toBe(409);
    expect(await action('restore', { uri: checkpoint })).toMatchObject({ policyVersion: 1 });
    expect(trainer.stats().appliedSteps).toBe(3);
    expect(trainer.stats().survivingByKey).toEqual({ 'run-1/iter-1/policy': 1 });
  });

  test('a restore answers 422 corrupt_object, as the kernel, for a checkpoint whose bytes are not those written', async () => {
    await trainer?.close();
    trainer = await startRecordingTrainer({ readBatch, writeObject: writeFileAtUri });
    baseUrl = trainer.url;
    await post(stepRequest(await writeBatch('batch.jsonl', ROWS), 1, 0));
    const checkpoint = pathToFileURL(path.join(dir, 'checkpoint-v1')).href;
    expect((await policyAction('checkpoint', { uri: checkpoint, version: 1 })).status).toBe(200);
    const state = path.join(dir, 'checkpoint-v1', 'state.json');
    const written = await readFile(state);
    // Bytes that still parse (a version rewritten) and bytes that do not: both are the corruption a retry rereads.
    for (const [bytes, says] of [
      [
        Buffer.from(written.toString('utf8').replace('"policyVersion":1', '"policyVersion":7')),
        /its sha256 is /,
      ],
      [Buffer.from('corrupted by a test\n'), /its sha256 is /],
    ] as const) {
      await writeFile(state, bytes);
      const reply = await policyAction('restore', { uri: checkpoint });
      expect({ status: reply.status, type: reply.json.error?.type }).toEqual({
        status: 422,
        type: 'corrupt_object',
      });
      expect(reply.json.error?.message).toMatch(new RegExp(`^${checkpoint}/state\\.json is corrupt: `));
      expect(reply.json.error?.message).toMatch(says);
    }
    await writeFile(state, written);
    expect((await policyAction('restore', { uri: checkpoint })).json).toMatchObject({ policyVersion: 1 });
  });

  test('a checkpoint on full storage answers 507 storage_full, as the kernel, and one on free storage 200', async () => {
    await trainer?.close();
    let full = true;
    const writeObject = async (uri: string, body: string): Promise<void> => {
      if (full)
        throw Object.assign(new Error('Storage backend has reached its minimum free drive threshold.'), {
          name: 'XMinioStorageFull',
          $metadata: { httpStatusCode: 507 },
        });
      await writeFileAtUri(uri, body);
    };
    trainer = await startRecordingTrainer({ readBatch, writeObject });
    baseUrl = trainer.url;
    const checkpoint = { uri: pathToFileURL(path.join(dir, 'ckpt')).href, version: 0 };
    const refused = await policyAction('checkpoint', checkpoint);
    expect({ status: refused.status, type: refused.json.error?.type }).toEqual({
      status: 507,
      type: 'storage_full',
    });
    expect(refused.json.error?.message).toMatch(
      /^storage full: free space or raise the retention, then `selfplay retry RUN` \(.*minimum free drive threshold/,
    );
    full = false;
    expect((await policyAction('checkpoint', checkpoint)).status).toBe(200);
  });

  test("checks requests against the kernel's generated contract: what the kernel takes, the fake takes", async () => {
    trainer = await start();
    const batch = await writeBatch('batch.jsonl', ROWS);
    const negativeControl = stepRequest(batch, 0, 0);
    negativeControl.optimizer.learningRate = 0; // the kernel's negative control: a run that must not learn
    expect((await post(negativeControl)).json).toMatchObject({ applied: true, policyVersion: 1 });
    const progress = (await (await fetch(`${baseUrl}/v1/train/progress`)).json()) as TrainProgress;
    expect(progress).toEqual({ object: 'train.progress', policy: '', step: null });
    const checkpoint = await fetch(`${baseUrl}/v1/policies/policy/checkpoint`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ uri: pathToFileURL(path.join(dir, 'ckpt')).href, versoin: 1 }),
    });
    expect(checkpoint.status).toBe(400);
    expect(((await checkpoint.json()) as StepReply).error?.message).toMatch(/versoin/);
  });

  test('answers 400 naming the bad field for malformed requests and batches', async () => {
    trainer = await start();
    const good = await writeBatch('good.jsonl.gz', ROWS);
    const { loss: _loss, ...noLoss } = stepRequest(good, 0, 0);
    const badRow = { ...row('reasoner', 0), messages: [] };
    const cases: Array<[string, unknown, string, RegExp]> = [
      ['not JSON', '{"idempotencyKey":', 'invalid_request', /not valid JSON/],
      ['missing loss', noLoss, 'invalid_request', /^loss: /],
      ['unknown field', { ...stepRequest(good, 0, 0), extra: 1 }, 'invalid_request', /extra/],
      ['negative iteration', stepRequest(good, -1, 0), 'invalid_request', /^iteration: /],
      [
        'row count',
        stepRequest({ ...good, rows: 4 }, 0, 0),
        'batch_invalid',
        /^batch\.rows: .*3 rows, not 4/,
      ],
      [
        'missing object',
        stepRequest({ ...good, uri: `${good.uri}.missing` }, 0, 0),
        'batch_not_found',
        /^batch\.uri: /,
      ],
      [
        'empty messages',
        stepRequest(await writeBatch('rows.jsonl', [row('c', 1), badRow]), 0, 0),
        'batch_invalid',
        /^batch line 2: messages: /,
      ],
      [
        'infinite advantage',
        stepRequest(
          await writeBatch('inf.jsonl', [
            '{"messages":[{"role":"user","content":"q"}],"completion":"a","role":"r","group":"g","reward":0,"advantage":1e999}',
          ]),
          0,
          0,
        ),
        'batch_invalid',
        /^batch line 1: advantage: /,
      ],
      [
        'missing group',
        stepRequest(await writeBatch('group.jsonl', [{ ...row('c', 1), group: undefined }]), 0, 0),
        'batch_invalid',
        /^batch line 1: group: /,
      ],
    ];
    for (const [name, body, type, message] of cases) {
      const reply = await post(body);
      expect({ name, status: reply.status, type: reply.json.error?.type }).toEqual({
        name,
        status: 400,
        type,
      });
      expect(reply.json.error?.message).toMatch(message);
    }
    expect(await policyVersion()).toBe(0);
    expect(trainer.stats()).toMatchObject({
      appliedSteps: 0,
      rejected: cases.length,
      requests: cases.length,
    });
  });

  test('answers 422 corrupt_object, as the kernel, for a batch whose bytes hash to another sha256 or do not decode', async () => {
    trainer = await start();
    const good = await writeBatch('good.jsonl.gz', ROWS);
    const cases: Array<[string, unknown, RegExp]> = [
      ['bad sha256', stepRequest({ ...good, sha256: 'a'.repeat(64) }, 0, 0), /^batch\.sha256: /],
      [
        'not gzip',
        stepRequest(await writeObject('plain.jsonl.gz', Buffer.from(jsonl(ROWS)), 3), 0, 0),
        /^batch\.uri: not a gzip object/,
      ],
      [
        'a line not JSON',
        stepRequest(await writeBatch('half.jsonl', [row('c', 1), '{"messages":']), 0, 0),
        /^batch line 2: not JSON/,
      ],
    ];
    for (const [name, body, message] of cases) {
      const reply = await post(body);
      expect({ name, status: reply.status, type: reply.json.error?.type }).toEqual({
        name,
        status: 422,
        type: 'corrupt_object',
      });
      expect(reply.json.error?.message).toMatch(message);
    }
    expect(await policyVersion()).toBe(0);
  });

  test('a state file carries versions and applied keys across a restart', async () => {
    const stateFile = path.join(dir, 'trainer-state.json');
    trainer = await start(stateFile);
    const batch = await writeBatch('batch.jsonl.gz', ROWS);
    const first = await post(stepRequest(batch, 0, 0));
    await post(stepRequest(batch, 1, 1));
    await trainer.close();

    trainer = await start(stateFile);
    expect(await policyVersion()).toBe(2);
    const replayed = await post(stepRequest(batch, 0, 0));
    expect(replayed.json).toEqual({ ...first.json, applied: false });
    expect((await post(stepRequest(batch, 2, 2))).json).toMatchObject({ applied: true, policyVersion: 3 });
    expect(trainer.stats()).toMatchObject({
      appliedSteps: 3,
      appliedByKey: { 'run-1/iter-0/policy': 1, 'run-1/iter-1/policy': 1, 'run-1/iter-2/policy': 1 },
    });
    expect((await readdir(dir)).filter((f) => f.includes('.tmp'))).toEqual([]);

    // Without the state file, a trainer starts from nothing: the file is what made the difference above.
    trainer = await start();
    expect(await policyVersion()).toBe(0);
  });

  test('the CLI reads file:// batches through storage and keeps its state file', async () => {
    const root = path.resolve(__dirname, '../../..');
    const stateFile = path.join(dir, 'cli-state.json');
    const child = spawn(
      process.execPath,
      [
        path.join(root, 'node_modules/tsx/dist/cli.mjs'),
        path.join(root, 'test/support/recording-trainer/main.ts'),
        '--port',
        '0',
        '--state-file',
        stateFile,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
    const { url } = JSON.parse(line) as { url: string };
    baseUrl = url;
    const batch = await writeBatch('batch.jsonl.gz', ROWS);
    expect((await post(stepRequest(batch, 0, 0))).json).toMatchObject({ applied: true, policyVersion: 1 });
    const missing = await post(stepRequest({ ...batch, uri: `${batch.uri}.missing` }, 1, 1));
    expect(missing).toMatchObject({ status: 400, json: { error: { type: 'batch_not_found' } } });
    const stats = (await (await fetch(`${url}/admin/stats`)).json()) as {
      appliedSteps: number;
      rejected: number;
    };
    expect(stats).toMatchObject({ appliedSteps: 1, rejected: 1 });
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    expect(await exited).toEqual([0, null]);
    const saved = JSON.parse(await readFile(stateFile, 'utf8')) as { versions: Record<string, number> };
    expect(saved.versions).toEqual({ policy: 1 });
  }, 60_000);
});
