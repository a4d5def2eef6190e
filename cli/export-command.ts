import path from 'node:path';
import type { ObjectStore } from '../activities/clients/storage';
import { runPythonModule } from '../activities/lib/python';
import { keptManifest } from '../activities/stages/lineage';

export interface ExportRequest {
  runId: string;
  out: string;
  iteration?: number;
  policy?: string;
  mergeLora: boolean;
  model?: string;
  python: string;
}

/** What the kernel's `export` wrote (selfplay_kernel/export.py). */
export interface ExportResult {
  out: string;
  format: 'full' | 'lora-adapter';
  policy: string;
  policyVersion: number;
  files: string[];
}

/**
 * Exports the checkpoint a kept commit names (along the run's current lineage, as `state` reads) with the
 * kernel's `export`, which rebuilds the policy as the kernel built it and writes it with `save_pretrained`.
 */
export async function exportPolicy(store: ObjectStore, request: ExportRequest): Promise<ExportResult> {
  const { lineage, manifest } = await keptManifest(store, request.runId, request.iteration);
  const names = Object.keys(manifest.policies);
  const policy = request.policy ?? (names.length === 1 ? names[0] : undefined);
  if (policy === undefined || !manifest.policies[policy]) {
    throw new Error(
      `--policy: iteration ${manifest.iteration} of ${request.runId} committed ${names.join(', ')}; ` +
        (request.policy ? `not "${request.policy}"` : 'name the one to export'),
    );
  }
  const checkpoint = manifest.policies[policy]?.checkpointUri;
  if (!checkpoint) {
    throw new Error(
      `iteration ${manifest.iteration} of ${request.runId} committed no checkpoint of policy "${policy}" ` +
        '(training.checkpoint was false, or retention deleted it): nothing to export; pick another --iteration',
    );
  }
  const out = request.out.startsWith('s3://') ? request.out : path.resolve(request.out);
  const meta = { run: request.runId, lineage, iteration: manifest.iteration };
  const stdout = await runPythonModule(
    request.python,
    'selfplay_kernel',
    [
      'export',
      ...['--checkpoint', checkpoint, '--out', out, '--meta', JSON.stringify(meta)],
      ...(request.mergeLora ? ['--merge-lora'] : []),
      ...(request.model ? ['--model', request.model] : []),
    ],
    { what: 'export' },
  );
  const last = stdout.trim().split('\n').at(-1) ?? '';
  return JSON.parse(last) as ExportResult;
}
