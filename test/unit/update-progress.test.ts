import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MockActivityEnvironment } from '@temporalio/testing';
import { LocalStore } from '../../activities/clients/storage';
import { InferencePool } from '../../activities/clients/inference';
import { RECIPES } from '../../activities/recipes';
import { heartbeatClock } from '../../activities/lib/heartbeat';
import { failureEdge } from '../../activities/lib/stuck';
import { updateActivities } from '../../activities/stages/update';
import { loadWorkerEnv } from '../../config/env';
import { resolveRunConfig } from '../../config/schema';
import type { UpdateInput } from '../../contracts/selfplay';
import { startRecordingTrainer, type RecordingTrainer } from '../support/recording-trainer/server';

/**
 * The update activity's heartbeat while its step trains: the kernel's rows trained (GET /v1/train/progress),
 * rising as the step goes, beside the stage it waits on, which alone is what the stuck detection compares.
 */
describe('the update activity heartbeats the progress of its step', () => {
  let dir: string;
  let trainer: RecordingTrainer | undefined;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'update-progress-'));
  });
  afterEach(async () => {
    await trainer?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const rows = ['4', '5', '6'].map((answer, i) => ({
    messages: [{ role: 'user', content: 'What is 2 + 2?' }],
    completion: answer,
    role: 'reasoner',
    group: 'reasoner/doc-1',
    reward: i === 0 ? 1 : 0,
    advantage: i === 0 ? 1 : -0.5,
  }));

  test('each beat carries the rows the kernel has trained so far, rising to all of them', async () => {
    const beats: Array<Record<string, unknown>> = [];
    /** Resolves once a beat reports `rowsTrained` (the step then moves on: no clock decides). */
    const beatWith = (rowsTrained: number) =>
      new Promise<void>((resolve) => {
        const seen = (beat: unknown) => {
          if ((beat as { rowsTrained?: unknown } | undefined)?.rowsTrained !== rowsTrained) return;
          env.off('heartbeat', seen);
          resolve();
        };
        env.on('heartbeat', seen);
      });
    trainer = await startRecordingTrainer({
      readBatch: (uri) => readFile(fileURLToPath(uri)),
      duringStep: async (step, trained) => {
        for (let done = 1; done <= step.rows; done++) {
          const shown = beatWith(done);
          trained(done);
          await shown;
        }
      },
    });
    const text = rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
    const file = path.join(dir, 'batch.jsonl');
    await writeFile(file, text);
    const batch = {
      key: 'batch.jsonl',
      uri: pathToFileURL(file).href,
      rows: rows.length,
      sha256: createHash('sha256').update(text).digest('hex'),
    };
    const resolved = resolveRunConfig({
      recipe: 'spice',
      training: { checkpoint: false },
      weightSync: { engine: 'none' },
    });
    if (!resolved.ok) throw new Error(resolved.problems.join('; '));
    const deps = {
      store: new LocalStore(path.join(dir, 'store')),
      env: loadWorkerEnv({ SELFPLAY_TRAINER_URL: trainer.url, SELFPLAY_STORAGE: path.join(dir, 'store') }),
      inference: new InferencePool(),
      recipes: RECIPES,
    };
    // A 3 s heartbeat timeout: a beat (and a poll of the kernel) every second.
    const env = new MockActivityEnvironment(
      { activityType: 'update', heartbeatTimeoutMs: 3_000 },
      { interceptors: [heartbeatClock, failureEdge] },
    );
    env.on('heartbeat', (beat: Record<string, unknown>) => beats.push(beat));

    const activities = updateActivities(deps);
    const result = await env.run((input: UpdateInput) => activities.update(input), {
      runId: 'run-1',
      iteration: 1,
      config: resolved.config,
      policy: 'policy',
      committed: { version: 0 },
      batch,
    });

    expect(result).toMatchObject({ applied: true, committed: { version: 1 } });
    const trained = beats.filter((b) => b.rowsTrained !== undefined);
    expect([...new Set(trained.map((b) => b.rowsTrained))]).toEqual([1, 2, 3]);
    expect(trained[0]).toEqual({
      waiting: 'train_step',
      policy: 'policy',
      rowsTrained: 1,
      rows: 3,
      miniBatchesDone: 0,
      miniBatches: 1,
    });
  }, 30_000);
});
