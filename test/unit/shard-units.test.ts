import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { SPICE_CALLS } from '../../activities/clients/llm-protocol';
import { LocalStore } from '../../activities/clients/storage';
import { shardKey, unitKey } from '../../activities/clients/storage/keys';
import { NON_RETRYABLE, nonRetryable } from '../../activities/lib/errors';
import { runShardUnits, type ShardUnitsResult } from '../../activities/stages/shard-units';
import { scriptedEndpoint } from '../support/scripted-llm/endpoint';
import { waitFor } from '../support/wait';
import { startScriptedLlm } from '../support/scripted-llm/server';

interface Out {
  unit: number;
  value: string;
}

/** Units of one shard, run as the activity runs them (inside an activity context, for its heartbeats). */
describe('the units of a shard', () => {
  const store = new LocalStore(mkdtempSync(path.join(os.tmpdir(), 'shard-units-')));
  const inputs = [{ unit: 0 }, { unit: 1 }, { unit: 2 }];
  let runs = 0;
  const attempt = (
    runId: string,
    work: (input: { unit: number }, signal: AbortSignal) => Promise<Out>,
  ): Promise<ShardUnitsResult<Out>> =>
    new MockActivityEnvironment().run(() =>
      runShardUnits({ store, runId, iteration: 1, stage: 'solve', shard: 0, inputs, work }),
    );
  const fresh = (): string => `units-${++runs}`;

  test('a transient failure of one unit: its siblings finish and are stored before the attempt fails; the retry computes only the failed unit', async () => {
    const runId = fresh();
    const events: string[] = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const failed = attempt(runId, async ({ unit }) => {
      if (unit === 0) {
        // Released one macrotask later: an attempt that failed without waiting has failed by then.
        setImmediate(release);
        throw new Error('inference 503 (transient)');
      }
      await released;
      events.push(`unit ${unit} finished`);
      return { unit, value: `v${unit}` };
    }).catch((err: Error) => {
      events.push('attempt failed');
      return err;
    });
    expect(await failed).toMatchObject({ message: 'inference 503 (transient)' });
    expect(events).toEqual(['unit 1 finished', 'unit 2 finished', 'attempt failed']);
    for (const unit of [1, 2]) expect(await store.exists(unitKey(runId, 1, 'solve', 0, unit))).toBe(true);

    const computed: number[] = [];
    const retried = await attempt(runId, ({ unit }) => {
      computed.push(unit);
      return Promise.resolve({ unit, value: `retry-v${unit}` });
    });
    expect(computed).toEqual([0]);
    expect(retried.reusedUnits).toBe(2);
    expect(retried.records.map((r) => r.value)).toEqual(['retry-v0', 'v1', 'v2']);
  });

  test('an attempt that outlived its retry (a worker cut off by a Temporal outage) replaces nothing the retry stored', async () => {
    const runId = fresh();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // The first attempt is still sampling unit 2 when Temporal gives up on it and starts the retry.
    const zombie = attempt(runId, async ({ unit }) => {
      if (unit === 2) await released;
      return { unit, value: `zombie-v${unit}` };
    });
    const stored = (unit: number) => store.exists(unitKey(runId, 1, 'solve', 0, unit));
    await waitFor('units 0 and 1 stored', async () => (await stored(0)) && (await stored(1)));
    const retry = await attempt(runId, ({ unit }) => Promise.resolve({ unit, value: `retry-v${unit}` }));
    const shard = shardKey(runId, 1, 'solve', 0);
    const read = await store.get(shard);
    release();
    const late = await zombie;
    expect(retry.records.map((r) => r.value)).toEqual(['zombie-v0', 'zombie-v1', 'retry-v2']);
    // The shard object a later stage read is still the retry's, and the zombie returns it too.
    expect(await store.get(shard)).toEqual(read);
    expect(late.records).toEqual(retry.records);
  });

  test('a deterministic failure of one unit aborts its siblings; the attempt fails with that failure once they stopped', async () => {
    const runId = fresh();
    const aborted: unknown[] = [];
    const fatal = nonRetryable(NON_RETRYABLE.unknownModel, 'the server does not know model "m"');
    const err = await attempt(runId, ({ unit }, signal) => {
      if (unit === 0) return Promise.reject(fatal);
      // A sibling in the middle of a long call: it ends only when its signal aborts.
      return new Promise<Out>((_, reject) =>
        signal.addEventListener('abort', () => {
          aborted.push(signal.reason);
          reject(new Error(`unit ${unit} aborted`));
        }),
      );
    }).catch((e: unknown) => e);
    expect(err).toBe(fatal);
    expect(aborted).toEqual([fatal, fatal]);
    expect(await store.list(`runs/${runId}/`)).toEqual([]);
  });

  test('each beat carries the completion tokens the attempt has sampled so far beside its units', async () => {
    const llm = await startScriptedLlm();
    try {
      const endpoint = scriptedEndpoint(llm);
      const sampled: number[] = [];
      const env = new MockActivityEnvironment();
      const beats: unknown[] = [];
      env.on('heartbeat', (beat: unknown) => beats.push(beat));
      await env.run(() =>
        runShardUnits({
          store,
          runId: fresh(),
          iteration: 1,
          stage: 'solve',
          shard: 0,
          inputs,
          work: async ({ unit }) => {
            const [sample] = await endpoint.chat({
              role: 'reasoner',
              call: SPICE_CALLS.reason,
              messages: [{ role: 'user', content: `Problem 0000abcd: compute 3 * ${unit} + 1.` }],
              n: 1,
              seed: unit,
              temperature: 1,
              topP: 1,
              maxTokens: 256,
            });
            sampled.push(sample?.completionTokens ?? Number.NaN);
            return { unit, value: sample?.content ?? '' };
          },
        }),
      );
      const tokens = sampled.reduce((a, b) => a + b, 0);
      expect(tokens).toBeGreaterThan(0);
      expect(beats.at(-1)).toEqual({ stage: 'solve', shard: 0, done: 3, total: 3, completionTokens: tokens });
    } finally {
      await llm.close();
    }
  });
});
