import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { LocalStore } from '../../activities/clients/storage';
import { InferencePool } from '../../activities/clients/inference';
import { forgetCorpora } from '../../activities/corpus/corpus';
import { isNonRetryable, NON_RETRYABLE_TYPES } from '../../activities/lib/errors';
import { RECIPES } from '../../activities/recipes';
import { planActivities } from '../../activities/stages/plan';
import { loadWorkerEnv } from '../../config/env';
import { resolveRunConfig, type RunConfig } from '../../config/schema';
import { retryPolicy } from '../../workflows/activity-options';
import { freePort } from '../support/free-port';

const config = (extra: Record<string, unknown> = {}): RunConfig => {
  const r = resolveRunConfig({ recipe: 'spice', batchSize: 4, shardSize: 4, ...extra });
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.config;
};

describe('retry classes', () => {
  test('transient failures retry without an attempt limit, with capped backoff; the deterministic types are listed', () => {
    const policy = retryPolicy(config().timeouts);
    expect(policy.maximumAttempts).toBeUndefined();
    expect(policy).toMatchObject({ initialInterval: '1 seconds', maximumInterval: '60 seconds' });
    expect([...(policy.nonRetryableErrorTypes ?? [])].sort()).toEqual([
      'ContractViolation',
      'CorruptData',
      'InvalidConfig',
      'InvalidInput',
      'ProgrammingError',
      'StorageFull',
      'UnknownModel',
      'VersionConflict',
    ]);
    // Scaled down by config (the tests and the chaos suite do this), and capped when a config asks for it.
    const scaled = retryPolicy(
      config({ timeouts: { retryInitialSeconds: 0.2, retryMaxSeconds: 2, activityMaxAttempts: 4 } }).timeouts,
    );
    expect(scaled).toMatchObject({
      initialInterval: '0.2 seconds',
      maximumInterval: '2 seconds',
      maximumAttempts: 4,
    });
  });

  test('configs written before the retry fields still validate; a cap below the first wait is refused', () => {
    const old = resolveRunConfig({
      recipe: 'spice',
      timeouts: {
        rolloutShardMinutes: 240,
        trainStepMinutes: 120,
        heartbeatSeconds: 120,
        activityMaxAttempts: 10,
      },
    });
    expect(old.ok && old.config.timeouts).toEqual({
      rolloutShardMinutes: 240,
      trainStepMinutes: 120,
      orchestratorMinutes: 120,
      heartbeatSeconds: 120,
      activityMaxAttempts: 10,
      retryInitialSeconds: 1,
      retryMaxSeconds: 60,
      stuckAfterMinutes: 30,
    });
    const bad = resolveRunConfig({
      recipe: 'spice',
      timeouts: { retryInitialSeconds: 30, retryMaxSeconds: 5 },
    });
    expect(bad.ok ? [] : bad.problems).toEqual([
      'timeouts.retryMaxSeconds: must be at least timeouts.retryInitialSeconds',
    ]);
  });

  test('isNonRetryable: the listed types and non-retryable failures, nothing else', () => {
    expect(isNonRetryable(ApplicationFailure.nonRetryable('x', 'Whatever'))).toBe(true);
    for (const type of NON_RETRYABLE_TYPES)
      expect(isNonRetryable(ApplicationFailure.create({ type }))).toBe(true);
    expect(isNonRetryable(ApplicationFailure.retryable('x', 'Timeout'))).toBe(false);
    expect(isNonRetryable(new Error('ECONNREFUSED'))).toBe(false);
  });

  describe("plan's corpus read", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'retry-classes-'));
    // The plan heartbeats (its index build's progress), so it runs in an activity's context, as on a worker.
    const plan = (corpusUri: string): Promise<unknown> =>
      new MockActivityEnvironment().run(() =>
        planActivities({
          store: new LocalStore(path.join(dir, 'store')),
          // The corpora this test reads are inside the worker's input roots: what fails is the read.
          env: loadWorkerEnv({ SELFPLAY_INPUT_ROOTS: `${dir},s3://selfplay-down` }),
          inference: new InferencePool(),
          recipes: RECIPES,
        }).plan({
          runId: 'r',
          iteration: 1,
          config: config({ corpus: { uri: corpusUri } }),
          versions: { policy: 0 },
        }),
      );
    const failureOf = (p: Promise<unknown>): Promise<unknown> =>
      p.then(
        () => {
          throw new Error('expected the plan to fail');
        },
        (err: unknown) => err,
      );
    afterEach(() => forgetCorpora());

    test('a missing or malformed corpus is the config: InvalidConfig, non-retryable, naming corpus.uri', async () => {
      const missing = path.join(dir, 'nowhere.jsonl');
      const notGzip = path.join(dir, 'corpus.jsonl.gz');
      writeFileSync(notGzip, '{"id":"a","text":"plain text, not gzip"}\n');
      const empty = path.join(dir, 'empty.jsonl');
      writeFileSync(empty, 'not json\n');
      for (const [uri, says] of [
        [missing, 'no such file'],
        [notGzip, 'not valid gzip'],
        [empty, 'has no usable documents'],
      ] as const) {
        const err = await failureOf(plan(uri));
        expect(err).toBeInstanceOf(ApplicationFailure);
        expect(err).toMatchObject({ type: 'InvalidConfig', nonRetryable: true });
        expect((err as Error).message).toContain(`corpus.uri ${uri}`);
        expect((err as Error).message).toContain(says);
      }
    });

    test('storage that does not answer is an outage: a plain Error, retried', async () => {
      const saved = process.env.S3_ENDPOINT;
      // Nothing listens on this port: every request is refused, as with MinIO stopped.
      process.env.S3_ENDPOINT = `http://127.0.0.1:${await freePort()}`;
      try {
        const err = await failureOf(plan('s3://selfplay-down/corpus.jsonl'));
        expect(err).not.toBeInstanceOf(ApplicationFailure);
        expect(isNonRetryable(err)).toBe(false);
        expect((err as Error).message).toMatch(
          /corpus\.uri s3:\/\/selfplay-down\/corpus\.jsonl: .*\(transient: retried\)/s,
        );
      } finally {
        if (saved === undefined) delete process.env.S3_ENDPOINT;
        else process.env.S3_ENDPOINT = saved;
      }
    });
  });
});
