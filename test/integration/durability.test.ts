import path from 'node:path';
import os from 'node:os';
import { mkdtempSync } from 'node:fs';
import { Connection } from '@temporalio/client';
import { getJson, getJsonl } from '../../activities/clients/storage/codec';
import { latestKey, manifestKey, shardKey } from '../../activities/clients/storage/keys';
import { openStore, readObjectAtUri, writeObjectAtUri } from '../../activities/clients/storage';
import { seedOf } from '../../activities/lib/rng';
import { SPICE_CALLS } from '../../activities/clients/llm-protocol';
import type { SpiceSolved } from '../../activities/recipes/spice/records';
import type { Manifest } from '../../contracts/selfplay';
import { selfPlayRun } from '../../workflows';
import { queueNames } from '../../workers/pools';
import { fingerprintOf } from '../support/scripted-llm/chat-request';
import { startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm/server';
import { startRecordingTrainer, type RecordingTrainer } from '../support/recording-trainer/server';
import { startTemporalDevServer } from '../support/temporal-server';
import { spawnWorker } from '../support/worker-process';
import { uniqueId } from '../support/stack';
import { waitFor } from '../support/wait';
import { temporalClient } from '../support/temporal-client';

const G = 4;

/** The fingerprints of the Reasoner requests behind solve records: what the scripted server counted. */
function solveFingerprints(records: SpiceSolved[], seed: number, iteration: number): string[] {
  return records.flatMap((r) =>
    r.answers.map((a) =>
      fingerprintOf(
        SPICE_CALLS.reason,
        a.messages,
        seedOf(seed, iteration, 'solve', r.docIndex, a.trajectory),
        G,
      ),
    ),
  );
}

/**
 * Crashes with real processes: a worker SIGKILLed in the middle of solve, and the whole stack (Temporal,
 * worker, LLM server, trainer) killed and restarted. Storage is the shared MinIO of the global setup.
 */
describe('durability', () => {
  const bucket = process.env.SELFPLAY_TEST_BUCKET as string;
  let llm: ScriptedLlm;
  let trainer: RecordingTrainer;
  let stateFile: string;

  beforeEach(async () => {
    // Reasoner calls are slow enough (one request of G at a time) that the worker dies while solve runs.
    llm = await startScriptedLlm({ capacity: G, calls: { [SPICE_CALLS.reason]: { latencyMs: 150 } } });
    stateFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'trainer-')), 'state.json');
    trainer = await startRecordingTrainer({
      readBatch: readObjectAtUri,
      writeObject: writeObjectAtUri,
      stateFile,
    });
  });
  afterEach(async () => {
    await Promise.all([llm.close(), trainer.close()]);
  });

  const setup = (address: string) => {
    const runId = uniqueId('durable');
    const prefix = uniqueId('dq');
    const storageUri = `s3://${bucket}/${runId}`;
    const env = () => ({
      TEMPORAL_ADDRESS: address,
      SELFPLAY_QUEUE_PREFIX: prefix,
      SELFPLAY_STORAGE: storageUri,
      SELFPLAY_INFERENCE_URL: llm.url,
      SELFPLAY_INFERENCE_MODEL: 'scripted-policy',
      SELFPLAY_TRAINER_URL: trainer.url,
    });
    const config = {
      recipe: 'spice',
      seed: 7,
      iterations: 3,
      batchSize: 8,
      shardSize: 4,
      groupSize: G,
      corpus: { uri: 'test/fixtures/corpus/small.jsonl' },
      sampling: { maxTokens: 2048 },
      pools: queueNames(prefix),
      training: { policy: runId },
      inference: { requestTimeoutSeconds: 10, maxRetries: 3 },
      timeouts: { heartbeatSeconds: 3, activityMaxAttempts: 10 },
    };
    return { runId, prefix, store: openStore(storageUri), env, config };
  };

  test('a worker SIGKILLed during solve: the run finishes, finished units are not regenerated, one step per iteration', async () => {
    const address = process.env.TEMPORAL_ADDRESS as string;
    const { runId, store, env, config } = setup(address);
    const connection = await Connection.connect({ address });
    const client = temporalClient(connection);
    let worker = spawnWorker(env());
    try {
      const handle = await client.workflow.start(selfPlayRun, {
        workflowId: runId,
        taskQueue: config.pools.orchestrator,
        args: [config],
      });

      // Kill once both shards have proposed and some, not all, of iteration 1's solve units are stored.
      const solvePrefix = shardKey(runId, 1, 'solve', 0).replace(/shard-0000\.jsonl\.gz$/, '');
      await waitFor('solve units in storage', async () => {
        const proposed = (
          await Promise.all([0, 1].map((s) => store.exists(shardKey(runId, 1, 'propose', s))))
        ).every(Boolean);
        const units = (await store.list(solvePrefix)).filter((k) => k.includes('/unit-'));
        return proposed && units.length >= 2;
      });
      await worker.stop('SIGKILL');
      const savedUnits = (await store.list(solvePrefix)).filter((k) => k.includes('/unit-'));
      const saved: SpiceSolved[] = [];
      for (const key of savedUnits) saved.push((await getJson<SpiceSolved>(store, key)) as SpiceSolved);
      const before = llm.stats();

      worker = spawnWorker(env());
      const outcome = await handle.result();
      const after = llm.stats();

      expect(outcome.lastCommitted).toBe(3);
      // Units written before the crash were read back, never asked again.
      const protectedPrints = solveFingerprints(saved, config.seed, 1);
      expect(protectedPrints.length).toBeGreaterThan(0);
      for (const fp of protectedPrints) expect(after.fingerprintCounts[fp]).toBe(1);
      // Every request sent twice is an iteration-1 Reasoner request of a unit that was not stored when the
      // worker died: proposals and stored units were never regenerated.
      const solved = (
        await Promise.all([0, 1].map((s) => getJsonl<SpiceSolved>(store, shardKey(runId, 1, 'solve', s))))
      ).flatMap((r) => r ?? []);
      const redoable = new Set(
        solveFingerprints(solved, config.seed, 1).filter((fp) => !protectedPrints.includes(fp)),
      );
      for (const fp of Object.keys(after.duplicates)) {
        expect(redoable.has(fp)).toBe(true);
        expect(before.fingerprintCounts[fp]).toBe(1);
      }
      const manifest = await getJson<Manifest>(store, manifestKey(runId, 1));
      expect(manifest?.metrics.reusedUnits).toBeGreaterThanOrEqual(savedUnits.length);
      // Exactly one training step per iteration, however often update was attempted.
      const steps = trainer.stats().steps.filter((s) => s.runId === runId);
      expect(steps.map((s) => s.iteration)).toEqual([1, 2, 3]);
      for (const s of steps) expect(trainer.stats().appliedByKey[s.key]).toBe(1);
    } finally {
      await worker.stop('SIGKILL');
      await connection.close();
    }
  });

  test('the whole stack killed after a commit resumes from that commit without redoing it', async () => {
    const temporal = await startTemporalDevServer();
    const { runId, store, env, config } = setup(temporal.address);
    let worker = spawnWorker(env());
    let connection = await Connection.connect({ address: temporal.address });
    try {
      await temporalClient(connection).workflow.start(selfPlayRun, {
        workflowId: runId,
        taskQueue: config.pools.orchestrator,
        args: [config],
      });
      await waitFor(
        'iteration 1 committed',
        async () => ((await getJson<{ iteration: number }>(store, latestKey(runId)))?.iteration ?? 0) >= 1,
      );
      const committed = await getJson<Manifest>(store, manifestKey(runId, 1));

      // Crash everything: worker, Temporal, the LLM server and the trainer (which keeps a state file).
      await worker.stop('SIGKILL');
      await connection.close();
      await temporal.stop('SIGKILL');
      await Promise.all([llm.close(), trainer.close()]);

      await temporal.restart();
      llm = await startScriptedLlm({ capacity: G });
      trainer = await startRecordingTrainer({
        readBatch: readObjectAtUri,
        writeObject: writeObjectAtUri,
        stateFile,
      });
      worker = spawnWorker(env());
      connection = await Connection.connect({ address: temporal.address });
      const outcome = await temporalClient(connection).workflow.getHandle<typeof selfPlayRun>(runId).result();

      expect(outcome.lastCommitted).toBe(3);
      expect(await getJson<Manifest>(store, manifestKey(runId, 1))).toEqual(committed);
      // Iteration 1's rollouts were never requested from the restarted LLM server.
      const solved = (
        await Promise.all([0, 1].map((s) => getJsonl<SpiceSolved>(store, shardKey(runId, 1, 'solve', s))))
      ).flatMap((r) => r ?? []);
      const prints = solveFingerprints(solved, config.seed, 1);
      expect(prints.length).toBeGreaterThan(0);
      for (const fp of prints) expect(llm.stats().fingerprintCounts[fp]).toBeUndefined();
      // The trainer's state survived its crash: every iteration applied exactly once.
      const applied = Object.entries(trainer.stats().appliedByKey).filter(([k]) => k.startsWith(`${runId}/`));
      expect(applied.map(([, n]) => n)).toEqual([1, 1, 1]);
    } finally {
      await worker.stop('SIGKILL');
      await connection.close();
      await temporal.stop();
    }
  });
});
