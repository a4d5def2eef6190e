import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { trainStepRequest } from '../../activities/stages/update';
import { TrainerClient } from '../../activities/clients/trainer';
import { batchKey } from '../../activities/clients/storage/keys';
import { resolveRunConfig } from '../../config/schema';
import { kernelToken, type KernelProcess } from './kernel-process';
import type { KernelRun } from './kernel-run';
import { readSafetensors } from './safetensors';

/** What a replay reads of a run: its committed manifests and batches (a test's KernelRun, the chaos suite's runs). */
export type CommittedRun = Pick<KernelRun, 'runId' | 'store' | 'manifest' | 'rows'>;

/** The file of a kernel checkpoint that holds its trainable parameters (infra/kernels/selfplay_kernel/state.py). */
const TRAINABLE = 'trainable.safetensors';

/**
 * What a run's weights must be when every committed step was applied exactly once, whatever failed on the
 * way: `fresh`, a kernel that has not trained (the run's model and settings, no faults), applies the batches
 * that iterations 1..`iterations` committed for `policy`, in order, each sent as the run's update sent it
 * (`trainStepRequest` of the same resolved `config`), and is checkpointed after each. Returns the trainable
 * parameters of each version (index 0: version 1).
 */
export async function replayCommitted(
  run: CommittedRun,
  config: Record<string, unknown>,
  iterations: number,
  fresh: KernelProcess,
  policy: string,
): Promise<Array<Map<string, Float32Array>>> {
  const resolved = resolveRunConfig(config);
  if (!resolved.ok) throw new Error(`the run's config does not resolve: ${resolved.problems.join('; ')}`);
  const trainer = new TrainerClient(fresh.url, { timeoutMs: 120_000, maxRetries: 0, token: kernelToken() });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'replay-'));
  const versions: Array<Map<string, Float32Array>> = [];
  for (let iteration = 1; iteration <= iterations; iteration++) {
    const key = batchKey(run.runId, iteration, policy);
    const manifest = await run.manifest(iteration);
    if (!manifest?.artifacts.batch?.includes(key)) {
      throw new Error(`iteration ${iteration} committed no batch ${key} for policy ${policy}`);
    }
    const bytes = await run.store.get(key);
    if (!bytes) throw new Error(`the committed batch ${key} is missing`);
    const batch = {
      key,
      uri: run.store.uri(key),
      rows: (await run.rows(iteration, policy)).length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    };
    const committed = { version: iteration - 1 };
    const request = trainStepRequest({
      config: resolved.config,
      runId: run.runId,
      iteration,
      policy,
      committed,
      batch,
    });
    const response = await trainer.trainStep(request);
    if (response.policyVersion !== iteration) {
      throw new Error(`the replay of iteration ${iteration} made version ${response.policyVersion}`);
    }
    const uri = path.join(dir, `v${iteration}`);
    await trainer.checkpoint(policy, { uri, version: iteration });
    versions.push(readSafetensors(readFileSync(path.join(uri, TRAINABLE))));
  }
  return versions;
}

/** The trainable parameters of the checkpoint a run committed at `uri` (under the run's store). */
export async function committedWeights(
  run: Pick<KernelRun, 'store'>,
  uri: string,
): Promise<Map<string, Float32Array>> {
  const root = run.store.root;
  if (!uri.startsWith(root)) throw new Error(`checkpoint ${uri} is not under the run's store ${root}`);
  const key = `${uri.slice(root.length).replace(/^\/+/, '')}/${TRAINABLE}`;
  const bytes = await run.store.get(key);
  if (!bytes) throw new Error(`checkpoint ${uri} has no ${TRAINABLE}`);
  return readSafetensors(bytes);
}
