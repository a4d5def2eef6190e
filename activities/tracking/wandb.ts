import { runPythonModule } from '../lib/python';
import type { Tracker, TrackedRun } from './types';

export interface WandbSettings {
  project: string;
  entity?: string;
  mode: 'online' | 'offline';
  /** Where W&B keeps its files (its `wandb/` folder, the offline runs): on the worker. */
  dir: string;
}

/**
 * Weights & Biases, through its Python SDK: `python -m selfplay_kernel.wandb_log` (the kernel package with
 * `wandb` installed; the worker's SELFPLAY_PYTHON) takes the request on stdin and logs the steps the W&B run
 * does not hold yet. The W&B run's id is the lineage, its group the run; the server and API key are the
 * worker's own (WANDB_BASE_URL, WANDB_API_KEY), passed on in the environment.
 */
export function wandbTracker(settings: WandbSettings, python: string): Tracker {
  return {
    name: 'wandb',
    async log(run, points) {
      if (points.length === 0) return;
      await runPythonModule(python, 'selfplay_kernel.wandb_log', [], {
        input: JSON.stringify({ settings, run: wandbRun(run), points }),
        env: { ...process.env, WANDB_SILENT: 'true' },
        what: 'W&B (SELFPLAY_PYTHON)',
      });
    },
  };
}

function wandbRun(run: TrackedRun): Record<string, unknown> {
  const lineage = run.parent ? { parent: run.parent.lineage, branchPoint: run.parent.iteration } : {};
  return {
    id: run.lineage,
    name: run.lineage,
    group: run.runId,
    config: { ...run.config, selfplay: lineage },
  };
}
