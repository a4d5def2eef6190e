import { mkdtempSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readObjectAtUri, writeObjectAtUri } from '../../activities/clients/storage';
import { selfPlayRun } from '../../workflows';
import { progressQuery } from '../../workflows/messages';
import { startFakeVllm, type FakeVllm } from '../support/fake-engines/vllm';
import { startRecordingTrainer, type RecordingTrainer } from '../support/recording-trainer/server';
import { startStack, uniqueId, type TestStack } from '../support/stack';
import { waitFor } from '../support/wait';

// vLLM loads from a local path: each test process copies the snapshots into a cache of its own.
process.env.SELFPLAY_SNAPSHOT_CACHE = mkdtempSync(path.join(os.tmpdir(), 'shared-server-cache-'));

/**
 * A fork started while its parent runs, both sampling through ONE vLLM server (the fake vLLM in front of the
 * scripted LLM) with the model name `{run}/{policy}-v{version}`: the fork inherits its parent's config, so
 * the two runs share the policy name and, from the fork point on, the version numbers. Each trains on a
 * kernel of its own (the recording trainer, publishing LoRA snapshots). Real Temporal and MinIO.
 */
describe('two runs sharing one inference server', () => {
  let stack: TestStack;
  let vllm: FakeVllm;
  const trainers: RecordingTrainer[] = [];
  beforeAll(async () => {
    stack = await startStack();
    vllm = await startFakeVllm({ upstream: { url: stack.llm.url, model: 'scripted-policy' } });
  });
  afterAll(async () => {
    await Promise.all([vllm.close(), ...trainers.map((t) => t.close()), stack.close()]);
  });

  const trainer = async (beforeStep?: (step: { runId: string; iteration: number }) => Promise<void>) => {
    const started = await startRecordingTrainer({
      readBatch: readObjectAtUri,
      writeObject: writeObjectAtUri,
      snapshotFormat: 'lora',
      publishDigests: true,
      ...(beforeStep ? { beforeStep } : {}),
    });
    trainers.push(started);
    return started;
  };

  test('a fork started while its parent runs samples only its own adapters; neither is unloaded or gets a 404', async () => {
    const parent = uniqueId('parent');
    const fork = uniqueId('fork');
    const policy = parent; // the fork inherits its parent's policy name
    // The parent's third step waits until the fork has committed its iteration 3: the runs surely overlap,
    // both at versions 1..3 at once.
    let forkCaughtUp: () => void = () => undefined;
    const caughtUp = new Promise<void>((resolve) => (forkCaughtUp = resolve));
    const parentTrainer = await trainer(async ({ runId, iteration }) => {
      if (runId === parent && iteration === 3) await caughtUp;
    });
    const forkTrainer = await trainer();
    stack.bind('SELFPLAY_KERNEL_TOKEN', parentTrainer.url, forkTrainer.url);
    stack.bind('SELFPLAY_INFERENCE_API_KEY', vllm.url);
    const config = (trainerUrl: string, overrides: Record<string, unknown> = {}) =>
      stack.runConfig({
        iterations: 4,
        training: { policy, trainerUrl },
        inference: {
          requestTimeoutSeconds: 10,
          maxRetries: 3,
          default: { baseUrl: vllm.url, model: '{run}/{policy}-v{version}' },
        },
        weightSync: { engine: 'vllm' },
        ...overrides,
      });

    // A second trainer worker: the parent's held step takes one trainer slot, the fork's steps the other.
    const withTwoTrainerWorkers = <T>(fn: () => Promise<T>) =>
      stack.withWorkers(() => stack.withWorkers(fn, ['trainer']));
    await withTwoTrainerWorkers(async () => {
      const parentRun = await stack.client.workflow.start(selfPlayRun, {
        workflowId: parent,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [config(parentTrainer.url)],
      });
      await waitFor(
        'the parent commits iteration 1',
        async () => (await parentRun.query(progressQuery)).lastCommitted >= 1,
      );
      // What `selfplay fork` starts: the parent's config under a new id, resumed from the parent's commit.
      const forkRun = await stack.client.workflow.start(selfPlayRun, {
        workflowId: fork,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [config(forkTrainer.url, { runId: fork, resumeFrom: { runId: parent, iteration: 1 } })],
      });
      await waitFor(
        'the fork commits iteration 3',
        async () => (await forkRun.query(progressQuery)).lastCommitted >= 3,
        180_000,
      );
      expect((await parentRun.query(progressQuery)).lastCommitted).toBe(2);
      forkCaughtUp();
      expect(await parentRun.result()).toMatchObject({ lastCommitted: 4, versions: { [policy]: 4 } });
      expect(await forkRun.result()).toMatchObject({ lastCommitted: 4, versions: { [policy]: 4 } });
    });

    // No request found its adapter missing: nothing either run asked for was unloaded or never loaded.
    expect(vllm.state.completions.length).toBeGreaterThan(0);
    expect(vllm.state.completions.filter((c) => c.path === undefined)).toEqual([]);
    // Each run asked only for its own adapters, at the versions its iterations sampled, each named with the
    // digest of the weights its commit published (the trainer's publish answers one).
    const DIGEST = /-[0-9a-f]{12}$/;
    expect(vllm.state.completions.every((c) => DIGEST.test(c.model))).toBe(true);
    const withoutDigest = (names: Iterable<string>) => [...names].map((m) => m.replace(DIGEST, ''));
    const versionsAsked = (run: string) =>
      [...new Set(withoutDigest(vllm.state.completions.map((c) => c.model)))]
        .filter((m) => m.startsWith(`${run}/`))
        .sort();
    expect(versionsAsked(parent)).toEqual([0, 1, 2, 3].map((v) => `${parent}/${policy}-v${v}`));
    expect(versionsAsked(fork)).toEqual([1, 2, 3].map((v) => `${fork}/${policy}-v${v}`));
    expect(
      vllm.state.completions.every((c) => c.model.startsWith(`${parent}/`) || c.model.startsWith(`${fork}/`)),
    ).toBe(true);

    // Every adapter served holds its own run's snapshot of that version (the fork point is the parent's v1).
    const snapshotOf = async (dir: string) =>
      (JSON.parse(await readFile(path.join(dir, 'adapter_config.json'), 'utf8')) as { uri: string }).uri;
    const served = new Map(vllm.state.completions.map((c) => [c.model, c.path as string]));
    for (const [model, dir] of served) {
      const [run, name] = model.split('/') as [string, string];
      const version = Number(/-v(\d+)-[0-9a-f]{12}$/.exec(name)?.[1]);
      const owner = run === fork && version === 1 ? `(${fork}|${parent})` : run;
      expect(await snapshotOf(dir)).toMatch(
        new RegExp(`/runs/${owner}/snapshots/${policy}/v${String(version).padStart(6, '0')}$`),
      );
    }
    // Each sync unloaded only its own run's stale adapters: both runs' last two versions sampled are served.
    expect(withoutDigest(vllm.state.adapters.keys()).sort()).toEqual(
      [fork, parent].flatMap((run) => [2, 3].map((v) => `${run}/${policy}-v${v}`)).sort(),
    );
    // Each run trained on its own kernel, every step once.
    expect(parentTrainer.stats().steps.map((s) => [s.runId, s.iteration])).toEqual(
      [1, 2, 3, 4].map((i) => [parent, i]),
    );
    expect(forkTrainer.stats().steps.map((s) => [s.runId, s.iteration])).toEqual(
      [2, 3, 4].map((i) => [fork, i]),
    );
  }, 300_000);
});
