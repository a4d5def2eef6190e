import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { KERNEL_PYTHON } from './kernel-process';

const READER = path.join(__dirname, 'read_trackers.py');
const KERNELS = path.resolve(__dirname, '../../infra/kernels');

const read = (args: string[]): unknown =>
  JSON.parse(
    execFileSync(KERNEL_PYTHON, [READER, ...args], {
      env: { ...process.env, PYTHONPATH: KERNELS, OMP_NUM_THREADS: '1' },
      encoding: 'utf8',
    }),
  );

export interface TensorBoardRun {
  scalars: Record<string, Array<[number, number]>>;
  histograms: Record<string, Array<[number, number[]]>>;
}

/** Every run under `logDir` as TensorBoard's own reader (EventMultiplexer) loads it. */
export const readTensorBoard = (logDir: string): Record<string, TensorBoardRun> =>
  read(['tensorboard', logDir]) as Record<string, TensorBoardRun>;

/** Every `_step` W&B's offline files under `dir` hold for the run `runId`, and its offline run folders. */
export const readWandbOffline = (dir: string, runId: string): { steps: number[]; runs: string[] } =>
  read(['wandb', dir, runId]) as { steps: number[]; runs: string[] };

/** MLflow's REST API: the runs of an experiment and the history of one metric of a run. */
export function mlflowClient(url: string) {
  const call = async <T>(pathAndQuery: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${url}/api/2.0/mlflow/${pathAndQuery}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!response.ok) throw new Error(`MLflow ${pathAndQuery}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  return {
    async runs(experiment: string): Promise<MlflowRunView[]> {
      const found = await call<{ experiment: { experiment_id: string } }>(
        `experiments/get-by-name?experiment_name=${encodeURIComponent(experiment)}`,
      );
      const { runs = [] } = await call<{ runs?: MlflowRunView[] }>('runs/search', {
        experiment_ids: [found.experiment.experiment_id],
      });
      return runs;
    },
    async history(runId: string, key: string): Promise<Array<{ step: number; value: number }>> {
      const query = `run_id=${runId}&metric_key=${encodeURIComponent(key)}&max_results=1000`;
      const { metrics = [] } = await call<{ metrics?: Array<{ step: number; value: number }> }>(
        `metrics/get-history?${query}`,
      );
      return metrics;
    },
  };
}

export interface MlflowRunView {
  info: { run_id: string; run_name: string };
  data: { tags?: Array<{ key: string; value: string }>; params?: Array<{ key: string; value: string }> };
}

/** A run's tags as a record. */
export const tagsOf = (run: MlflowRunView): Record<string, string> =>
  Object.fromEntries((run.data.tags ?? []).map((t) => [t.key, t.value]));
