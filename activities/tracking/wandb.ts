import { spawn } from 'node:child_process';
import type { TrackedPoint } from './points';
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
      await runHelper(python, { settings, run: wandbRun(run), points });
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

function runHelper(
  python: string,
  request: { settings: WandbSettings; run: Record<string, unknown>; points: readonly TrackedPoint[] },
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, ['-m', 'selfplay_kernel.wandb_log'], {
      env: { ...process.env, WANDB_SILENT: 'true' },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    child.on('error', (err) =>
      reject(new Error(`W&B: cannot start ${python} (SELFPLAY_PYTHON): ${err.message}`)),
    );
    child.on('close', (code) =>
      code === 0
        ? resolve()
        : reject(
            new Error(`W&B: ${python} -m selfplay_kernel.wandb_log exited with ${code}: ${stderr.trim()}`),
          ),
    );
    child.stdin.end(JSON.stringify(request));
  });
}
