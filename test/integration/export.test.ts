import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { LocalStore } from '../../activities/clients/storage';
import { checkpointPrefix } from '../../activities/clients/storage/keys';
import { InferencePool } from '../../activities/clients/inference';
import { RECIPES } from '../../activities/recipes';
import { commitActivities } from '../../activities/stages/commit';
import { loadWorkerEnv } from '../../config/env';
import type { IterationMetrics, PolicyCommit } from '../../contracts/selfplay';
import { selfplay } from '../support/cli';
import {
  buildTinyModel,
  kernelAuth,
  KERNEL_PYTHON,
  startKernel,
  type KernelProcess,
} from '../support/kernel-process';
import { configFor } from '../support/recipe-harness';

const tmp = (prefix: string): string => mkdtempSync(path.join(os.tmpdir(), prefix));
const metrics = { recipe: {}, train: {}, stages: {}, reusedUnits: 0 } as unknown as IterationMetrics;
/** This checkout's kernel package (the shared environment's editable install may point at another). */
const KERNELS = path.resolve(__dirname, '../../infra/kernels');

/**
 * `selfplay export` over a run's storage: the checkpoint a commit names, written by a real kernel, exported by
 * the CLI and loaded back with transformers.
 */
describe('selfplay export', () => {
  const store = new LocalStore(tmp('export-store-'));
  const commits = commitActivities({
    store,
    env: loadWorkerEnv({}),
    inference: new InferencePool(),
    recipes: RECIPES,
  });
  const model = buildTinyModel();
  let kernel: KernelProcess;
  beforeAll(async () => {
    kernel = await startKernel({ model, policy: 'pol' });
  });
  afterAll(() => kernel?.stop());

  const commit = (runId: string, iteration: number, committed: PolicyCommit) =>
    new MockActivityEnvironment().run(() =>
      commits.commit({
        runId,
        iteration,
        config: configFor({ recipe: 'spice', training: { policy: 'pol' } }),
        policies: { pol: committed },
        metrics,
        artifacts: {},
      }),
    );
  const cli = (args: string[]) =>
    selfplay(args, { SELFPLAY_STORAGE: store.root, SELFPLAY_PYTHON: KERNEL_PYTHON, PYTHONPATH: KERNELS });

  test('writes the committed checkpoint as a model transformers loads, and refuses what it cannot export', async () => {
    const runId = 'exported';
    const uri = store.uri(checkpointPrefix(runId, 'pol', 0));
    const saved = await fetch(`${kernel.url}/v1/policies/pol/checkpoint`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...kernelAuth() },
      body: JSON.stringify({ uri }),
    });
    expect(saved.status).toBe(200);
    await commit(runId, 1, { version: 0, checkpointUri: uri });

    const out = path.join(tmp('export-out-'), 'model');
    const exported = await cli(['export', runId, '--out', out]);
    expect(exported.code).toBe(0);
    expect(exported.stdout).toMatch(/exported pol v0 of run exported to .* \(full\): .*model\.safetensors/);
    expect(JSON.parse(readFileSync(path.join(out, 'selfplay_export.json'), 'utf8'))).toMatchObject({
      run: runId,
      iteration: 1,
      policyVersion: 0,
      format: 'full',
    });
    // transformers loads it alone, with the logits of the weights the kernel checkpointed (here its base).
    const compare = [
      'import sys, torch',
      'from transformers import AutoModelForCausalLM, AutoTokenizer',
      'probe = torch.tensor([[5, 17, 99, 300, 7, 42, 2]])',
      'a, b = (AutoModelForCausalLM.from_pretrained(p) for p in sys.argv[1:3])',
      'AutoTokenizer.from_pretrained(sys.argv[1])',
      'with torch.no_grad(): print(float((a(input_ids=probe).logits - b(input_ids=probe).logits).abs().max()))',
    ].join('\n');
    const difference = execFileSync(KERNEL_PYTHON, ['-c', compare, out, model], {
      env: { ...process.env, OMP_NUM_THREADS: '1' },
      encoding: 'utf8',
    });
    expect(Number(difference.trim())).toBe(0);

    await commit(runId, 2, { version: 1 });
    const none = await cli(['export', runId, '--out', out]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/iteration 2 of exported committed no checkpoint of policy "pol"/);
    const noOut = await cli(['export', runId]);
    expect(noOut.code).toBe(1);
    expect(noOut.stderr).toMatch(/^export needs --out DIR\|s3:\/\/…\n\nselfplay export RUN_ID --out /);
  });
});
