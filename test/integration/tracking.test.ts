import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { LocalStore } from '../../activities/clients/storage';
import { trackingKey } from '../../activities/clients/storage/keys';
import { InferencePool } from '../../activities/clients/inference';
import { RECIPES } from '../../activities/recipes';
import { commitActivities } from '../../activities/stages/commit';
import { trackingActivities } from '../../activities/tracking/track';
import { loadWorkerEnv } from '../../config/env';
import type { Lineage } from '../../contracts/lineage';
import type { IterationMetrics, TrackResult } from '../../contracts/selfplay';
import { selfPlayRun } from '../../workflows';
import { freePort } from '../support/free-port';
import { KERNEL_PYTHON } from '../support/kernel-process';
import { startMlflow, type MlflowServer } from '../support/mlflow-server';
import { startStack, uniqueId, type TestStack } from '../support/stack';
import { configFor } from '../support/recipe-harness';
import { mlflowClient, readTensorBoard, readWandbOffline, tagsOf } from '../support/trackers';

const tmp = (prefix: string): string => mkdtempSync(path.join(os.tmpdir(), prefix));

/**
 * The W&B helper is `python -m selfplay_kernel.wandb_log`: the kernel package of this checkout, which the
 * shared virtual environment's editable install may not point at.
 */
const pythonPath = process.env.PYTHONPATH;
beforeAll(() => {
  process.env.PYTHONPATH = path.resolve(__dirname, '../../infra/kernels');
});
afterAll(() => {
  if (pythonPath === undefined) delete process.env.PYTHONPATH;
  else process.env.PYTHONPATH = pythonPath;
});

/** Iteration n's metrics: reward and pass rates that change with n, a training step, held-out accuracy. */
const metricsOf = (n: number): IterationMetrics =>
  ({
    recipe: {
      documents: 8,
      validTaskRate: 0.5 + n / 10,
      invalidReasons: {},
      passRateHistogram: [1, n, 2, 0, 3],
      zeroAdvantageFraction: 0.25,
      meanRewardByRole: { challenger: n / 10, reasoner: 1 - n / 10 },
      rowsByRole: { challenger: 32, reasoner: 16 },
      extra: {},
    },
    train: {
      p: {
        loss: 0.5 / n,
        kl: 0.01 * n,
        clipFraction: 0.1,
        gradNorm: 2,
        entropy: 1.5,
        'tokens.reasoner': 900,
      },
    },
    stages: { solve: { wallSeconds: 3, busySeconds: 5 } },
    reusedUnits: 0,
    eval: { policy: 'p', version: n, benchmarks: { 'toy-heldout': { accuracy: 0.6 + n / 100 } } },
    ...(n === 1
      ? { evalAtStart: { policy: 'p', version: 0, benchmarks: { 'toy-heldout': { accuracy: 0.6 } } } }
      : {}),
  }) as unknown as IterationMetrics;

/**
 * The tracking activity against the real trackers: an MLflow server started here, W&B in offline mode (its
 * files read back), TensorBoard event files read by TensorBoard's own reader. Commits are made by the commit
 * activity into a local store.
 */
describe('tracking committed iterations', () => {
  const store = new LocalStore(tmp('tracking-store-'));
  const deps = {
    store,
    env: { ...loadWorkerEnv({}), python: KERNEL_PYTHON },
    inference: new InferencePool(),
    recipes: RECIPES,
  };
  const commits = commitActivities(deps);
  const tracking = trackingActivities(deps);
  let mlflow: MlflowServer | undefined;
  afterAll(() => mlflow?.stop());

  const commit = (runId: string, n: number) =>
    new MockActivityEnvironment().run(() =>
      commits.commit({
        runId,
        iteration: n,
        config: configFor({ recipe: 'spice', training: { policy: 'p' } }),
        policies: { p: { version: n } },
        metrics: metricsOf(n),
        artifacts: {},
      }),
    );
  const track = (tracking_: Record<string, unknown>, lineages: Lineage[], n: number): Promise<TrackResult> =>
    new MockActivityEnvironment().run(() =>
      tracking.trackCommits({
        runId: lineages[0]!.id,
        lineages,
        config: configFor({ recipe: 'spice', training: { policy: 'p' }, tracking: tracking_ }),
        iteration: n,
      }),
    );

  test('every tracker holds each step once, through a tracker outage, a repeated call and a rollback', async () => {
    const runId = uniqueId('tracked');
    const wandbDir = tmp('tracking-wandb-');
    const logDir = tmp('tracking-tb-');
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const settings = {
      wandb: { project: 'selfplay-test', mode: 'offline', dir: wandbDir },
      mlflow: { trackingUri: url, experiment: runId },
      tensorboard: { logDir },
    };
    const lineages: Lineage[] = [{ id: runId }];

    // MLflow is down for the first two commits: each call fails (the run would log it and go on), the other
    // trackers get their steps all the same.
    for (const n of [1, 2]) {
      await commit(runId, n);
      await expect(track(settings, lineages, n)).rejects.toThrow(/mlflow: .*fetch failed/);
    }
    expect(readWandbOffline(wandbDir, runId).steps).toEqual([0, 1, 2]);

    // Up again: the third commit's call catches MLflow up on every step.
    mlflow = await startMlflow({ port });
    await commit(runId, 3);
    expect((await track(settings, lineages, 3)).offered).toEqual({
      wandb: [3],
      mlflow: [0, 1, 2, 3],
      tensorboard: [3],
    });

    // A commit whose tracking was killed after logging and before recording it: the next call sends the
    // same steps again, and every tracker skips what it holds.
    for (const tracker of ['wandb', 'mlflow', 'tensorboard']) await store.delete(trackingKey(runId, tracker));
    expect((await track(settings, lineages, 3)).offered.mlflow).toEqual([0, 1, 2, 3]);

    const client = mlflowClient(url);
    const [run] = await client.runs(runId);
    expect(run).toBeDefined();
    expect(tagsOf(run!)).toMatchObject({ 'selfplay.lineage': runId, 'selfplay.run': runId });
    expect(run!.data.params).toEqual(expect.arrayContaining([{ key: 'recipe', value: 'spice' }]));
    const steps = async (key: string): Promise<number[]> =>
      (await client.history(run!.info.run_id, key)).map((m) => m.step).sort((a, b) => a - b);
    expect(await steps('selfplay/iteration')).toEqual([0, 1, 2, 3]);
    expect(await steps('tasks/valid_rate')).toEqual([1, 2, 3]);
    expect(await steps('eval/toy-heldout/accuracy')).toEqual([0, 1, 2, 3]);
    expect(await steps('reward/challenger')).toEqual([1, 2, 3]);
    expect(await steps('train/p/clipFraction')).toEqual([1, 2, 3]);
    expect(await steps('stage/solve/wall_seconds')).toEqual([1, 2, 3]);

    const wandb = readWandbOffline(wandbDir, runId);
    expect(wandb.steps).toEqual([0, 1, 2, 3]);
    expect(wandb.runs.length).toBe(4);

    const board = readTensorBoard(logDir)[runId]!;
    expect(board.scalars['reward/reasoner']).toEqual([
      [1, expect.closeTo(0.9, 6)],
      [2, expect.closeTo(0.8, 6)],
      [3, expect.closeTo(0.7, 6)],
    ]);
    expect(board.scalars['eval/toy-heldout/accuracy']?.map(([step]) => step)).toEqual([0, 1, 2, 3]);
    expect(board.histograms['tasks/pass_rate']?.[1]).toEqual([2, [1, 2, 2, 0, 3]]);

    // A rollback to iteration 2 starts lineage .r1: a tracker run of its own that names its parent and branch.
    const rolledBack: Lineage[] = [
      ...lineages,
      { id: `${runId}.r1`, from: { lineage: runId, iteration: 2 } },
    ];
    await commit(`${runId}.r1`, 3);
    expect((await track(settings, rolledBack, 3)).offered).toEqual({
      wandb: [3],
      mlflow: [3],
      tensorboard: [3],
    });
    const branch = (await client.runs(runId)).find((r) => r.info.run_name === `${runId}.r1`);
    expect(tagsOf(branch!)).toMatchObject({
      'selfplay.parent': runId,
      'selfplay.branch_point': '2',
      'mlflow.parentRunId': run!.info.run_id,
    });
    expect(readTensorBoard(logDir)[`${runId}.r1`]?.scalars['selfplay/iteration']).toEqual([[3, 3]]);
    expect(readWandbOffline(wandbDir, `${runId}.r1`).steps).toEqual([3]);
  }, 600_000);
});

/** The run workflow tracks after each commit, on the real stack, and a tracker that is down never holds it. */
describe('a run with tracking', () => {
  let stack: TestStack;
  let mlflow: MlflowServer | undefined;
  beforeAll(async () => {
    stack = await startStack({ env: { python: KERNEL_PYTHON } });
  });
  afterAll(async () => {
    await mlflow?.stop();
    await stack.close();
  });

  test('logs every commit; with MLflow down it completes, and resumed it catches MLflow up', async () => {
    const runId = uniqueId('tracked-run');
    const port = await freePort();
    const logDir = tmp('tracking-run-tb-');
    const wandbDir = tmp('tracking-run-wandb-');
    const tracking = {
      wandb: { project: 'selfplay-test', mode: 'offline', dir: wandbDir },
      mlflow: { trackingUri: `http://127.0.0.1:${port}`, experiment: runId },
      tensorboard: { logDir },
    };
    const run = (iterations: number) =>
      stack.withWorkers(() =>
        stack.client.workflow.execute(selfPlayRun, {
          workflowId: runId,
          taskQueue: `${stack.queuePrefix}-orchestrator`,
          args: [stack.runConfig({ training: { policy: runId }, iterations, tracking })],
        }),
      );

    expect((await run(2)).lastCommitted).toBe(2);
    expect(readTensorBoard(logDir)[runId]?.scalars['tasks/valid_rate']?.map(([step]) => step)).toEqual([
      1, 2,
    ]);
    expect(readWandbOffline(wandbDir, runId).steps).toEqual([1, 2]);

    mlflow = await startMlflow({ port });
    expect((await run(3)).lastCommitted).toBe(3);
    const client = mlflowClient(mlflow.url);
    const runs = await client.runs(runId);
    expect(runs.map((r) => r.info.run_name)).toEqual([runId]);
    const history = await client.history(runs[0]!.info.run_id, 'tasks/valid_rate');
    expect(history.map((m) => m.step).sort()).toEqual([1, 2, 3]);
    expect(readWandbOffline(wandbDir, runId).steps).toEqual([1, 2, 3]);
    expect(readTensorBoard(logDir)[runId]?.scalars['tasks/valid_rate']?.map(([step]) => step)).toEqual([
      1, 2, 3,
    ]);
  }, 600_000);
});
