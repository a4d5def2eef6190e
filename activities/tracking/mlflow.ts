import type { TrackedPoint } from './points';
import type { TrackedRun, Tracker } from './types';

/** MLflow's limits per `runs/log-batch` request. */
const MAX_METRICS = 1000;
const MAX_PARAMS = 100;
const MAX_PARAM_CHARS = 6000;
/** The metric every point logs last: its latest step is the last step the MLflow run holds. */
const STEP_METRIC = 'selfplay/iteration';
const LINEAGE_TAG = 'selfplay.lineage';

interface MlflowRun {
  info: { run_id: string };
  data?: { metrics?: Array<{ key: string; step: number }>; params?: unknown[] };
}

/**
 * An MLflow tracking server, through its REST API (2.0): an experiment, one MLflow run per lineage (tagged
 * with the lineage, nested under its parent lineage's run when that is in the experiment), the resolved config
 * as parameters once, and per step one `log-batch` (MLflow stores a batch in one transaction) that ends with
 * `selfplay/iteration`; its latest step is where a later call goes on from.
 */
export function mlflowTracker(settings: {
  trackingUri: string;
  experiment: string;
  token?: string;
}): Tracker {
  const base = settings.trackingUri.replace(/\/+$/, '');
  const call = async <T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> => {
    const url = `${base}/api/2.0/mlflow/${path}`;
    const response = await fetch(url, {
      method,
      headers: {
        'content-type': 'application/json',
        ...(settings.token ? { authorization: `Bearer ${settings.token}` } : {}),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    if (!response.ok)
      throw new MlflowError(
        response.status,
        `MLflow ${method} ${url}: ${response.status} ${text.slice(0, 500)}`,
      );
    return JSON.parse(text) as T;
  };

  const experimentId = async (): Promise<string> => {
    const name = encodeURIComponent(settings.experiment);
    try {
      const found = await call<{ experiment: { experiment_id: string } }>(
        'GET',
        `experiments/get-by-name?experiment_name=${name}`,
      );
      return found.experiment.experiment_id;
    } catch (err) {
      if (!(err instanceof MlflowError && err.status === 404)) throw err;
    }
    return (
      await call<{ experiment_id: string }>('POST', 'experiments/create', { name: settings.experiment })
    ).experiment_id;
  };

  const findRun = async (experiment: string, lineage: string): Promise<MlflowRun | undefined> => {
    const found = await call<{ runs?: MlflowRun[] }>('POST', 'runs/search', {
      experiment_ids: [experiment],
      filter: `tags.\`${LINEAGE_TAG}\` = '${lineage}'`,
      max_results: 1,
    });
    return found.runs?.[0];
  };

  const createRun = async (experiment: string, run: TrackedRun, startTime: number): Promise<MlflowRun> => {
    const parentRun = run.parent ? await findRun(experiment, run.parent.lineage) : undefined;
    const tags: Record<string, string> = {
      [LINEAGE_TAG]: run.lineage,
      'selfplay.run': run.runId,
      'selfplay.recipe': run.config.recipe,
      ...(run.parent
        ? { 'selfplay.parent': run.parent.lineage, 'selfplay.branch_point': String(run.parent.iteration) }
        : {}),
      ...(parentRun ? { 'mlflow.parentRunId': parentRun.info.run_id } : {}),
    };
    const created = await call<{ run: MlflowRun }>('POST', 'runs/create', {
      experiment_id: experiment,
      run_name: run.lineage,
      start_time: startTime,
      tags: Object.entries(tags).map(([key, value]) => ({ key, value })),
    });
    return created.run;
  };

  return {
    name: 'mlflow',
    async log(run, points) {
      if (points.length === 0) return;
      const experiment = await experimentId();
      const found =
        (await findRun(experiment, run.lineage)) ??
        (await createRun(experiment, run, points[0]!.wallTime * 1000));
      const runId = found.info.run_id;
      // Parameters once: MLflow refuses a parameter logged again with another value (a run's setParams).
      if (!found.data?.params?.length) {
        const params = flatten(run.config).map(([key, value]) => ({
          key,
          value: value.slice(0, MAX_PARAM_CHARS),
        }));
        for (let i = 0; i < params.length; i += MAX_PARAMS)
          await call('POST', 'runs/log-batch', { run_id: runId, params: params.slice(i, i + MAX_PARAMS) });
      }
      const last = found.data?.metrics?.find((m) => m.key === STEP_METRIC)?.step ?? -1;
      for (const point of points) {
        if (point.step <= last) continue;
        const metrics = metricsOf(point);
        for (let i = 0; i < metrics.length; i += MAX_METRICS)
          await call('POST', 'runs/log-batch', { run_id: runId, metrics: metrics.slice(i, i + MAX_METRICS) });
      }
    },
  };
}

class MlflowError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A point's scalars as MLflow metrics, `selfplay/iteration` last (in the last batch when it takes several). */
function metricsOf(
  point: TrackedPoint,
): Array<{ key: string; value: number; timestamp: number; step: number }> {
  const timestamp = Math.round(point.wallTime * 1000);
  const entries = Object.entries(point.scalars).filter(([key]) => key !== STEP_METRIC);
  return [...entries, [STEP_METRIC, point.step] as const].map(([key, value]) => ({
    key,
    value,
    timestamp,
    step: point.step,
  }));
}

/** The config as `a.b.c` → JSON value pairs (a string as it is). */
function flatten(value: unknown, prefix = ''): Array<[string, string]> {
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length > 0) {
    return Object.entries(value).flatMap(([key, v]) => flatten(v, prefix ? `${prefix}.${key}` : key));
  }
  return [[prefix, typeof value === 'string' ? value : JSON.stringify(value)]];
}
