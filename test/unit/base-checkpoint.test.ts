import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MockActivityEnvironment } from '@temporalio/testing';
import { LocalStore } from '../../activities/clients/storage';
import { checkpointPrefix } from '../../activities/clients/storage/keys';
import { InferencePool } from '../../activities/clients/inference';
import { TrainerClient } from '../../activities/clients/trainer';
import { COMPLETE_MARKER } from '../../activities/clients/trainer-contract';
import { RECIPES } from '../../activities/recipes';
import { trainStepRequest, updateActivities } from '../../activities/stages/update';
import { loadWorkerEnv } from '../../config/env';
import { resolveRunConfig } from '../../config/schema';
import type { PublishInput, UpdateInput } from '../../contracts/selfplay';
import { startRecordingTrainer, type RecordingTrainer } from '../support/recording-trainer/server';

/**
 * A run's first step that the kernel applied but the run never committed (its checkpoint met a full disk, or
 * its answer was lost to a crash) leaves the kernel at version 1 and the run at 0, with no committed checkpoint
 * to restore. Found by the long chaos run: a full disk right after a run's first step left the run waiting for
 * its operator with a version conflict that no retry could heal. The run's first prepareTrainer now
 * checkpoints the base weights, and the retried iteration restores them, so the step resent applies once.
 */
describe("a run's first step applied but not committed", () => {
  let dir: string;
  let trainer: RecordingTrainer;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'base-checkpoint-'));
    trainer = await startRecordingTrainer({
      readBatch: (uri) => readFile(fileURLToPath(uri)),
      writeObject: async (uri, body) => {
        const file = fileURLToPath(uri);
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, body);
      },
    });
  });
  afterEach(async () => {
    await trainer.close();
    await rm(dir, { recursive: true, force: true });
  });

  const setUp = async (checkpoint: boolean) => {
    const row = {
      messages: [{ role: 'user', content: 'What is 2 + 2?' }],
      completion: '4',
      role: 'reasoner',
    };
    const text = JSON.stringify({ ...row, group: 'reasoner/doc-1', reward: 1, advantage: 1 }) + '\n';
    const file = path.join(dir, 'batch.jsonl');
    await writeFile(file, text);
    const resolved = resolveRunConfig({
      recipe: 'spice',
      training: { checkpoint },
      weightSync: { engine: 'none' },
    });
    if (!resolved.ok) throw new Error(resolved.problems.join('; '));
    const store = new LocalStore(path.join(dir, 'store'));
    const activities = updateActivities({
      store,
      env: loadWorkerEnv({ SELFPLAY_TRAINER_URL: trainer.url, SELFPLAY_STORAGE: path.join(dir, 'store') }),
      inference: new InferencePool(),
      recipes: RECIPES,
    });
    const prepare: PublishInput = {
      runId: 'run-1',
      config: resolved.config,
      policy: 'policy',
      committed: { version: 0 },
    };
    const update: UpdateInput = {
      ...prepare,
      iteration: 1,
      batch: {
        key: 'batch.jsonl',
        uri: pathToFileURL(file).href,
        rows: 1,
        sha256: createHash('sha256').update(text).digest('hex'),
      },
    };
    const env = new MockActivityEnvironment();
    return {
      store,
      update,
      prepareTrainer: () => env.run((input: PublishInput) => activities.prepareTrainer(input), prepare),
      runUpdate: () => env.run((input: UpdateInput) => activities.update(input), update),
      /** The step applied as the failed update applied it, before its checkpoint. */
      applyStepOnly: () =>
        new TrainerClient(trainer.url, { timeoutMs: 10_000, maxRetries: 0 }).trainStep(
          trainStepRequest(update),
        ),
    };
  };

  test('the retried iteration restores the base checkpoint and the resent step applies once', async () => {
    const run = await setUp(true);
    await run.prepareTrainer();
    const base = checkpointPrefix('run-1', 'policy', 0);
    expect(await run.store.exists(`${base}/${COMPLETE_MARKER}`)).toBe(true);

    expect((await run.applyStepOnly()).policyVersion).toBe(1);
    await run.prepareTrainer();
    expect(trainer.stats().restores).toEqual([{ policy: 'policy', uri: run.store.uri(base), version: 0 }]);

    expect(await run.runUpdate()).toMatchObject({ applied: true, committed: { version: 1 } });
    const key = trainStepRequest(run.update).idempotencyKey;
    expect(trainer.stats().appliedByKey[key]).toBe(2);
    expect(trainer.stats().survivingByKey[key]).toBe(1);
  });

  test('without checkpoints the run still waits for its operator, saying what to do', async () => {
    const run = await setUp(false);
    await run.prepareTrainer();
    expect(await run.store.exists(`${checkpointPrefix('run-1', 'policy', 0)}/${COMPLETE_MARKER}`)).toBe(
      false,
    );
    await run.applyStepOnly();
    await expect(run.prepareTrainer()).rejects.toThrow(
      /at version 1, the run at 0, and no checkpoint of version 0 was committed .*restart the kernel/,
    );
  });
});
