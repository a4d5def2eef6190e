import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../../../activities/clients/storage';
import { getJson, putJson, putJsonl } from '../../../activities/clients/storage/codec';
import { lineageKey, shardKey } from '../../../activities/clients/storage/keys';
import { InferencePool } from '../../../activities/clients/inference';
import { usedDocsKey } from '../../../activities/continual/keys';
import { lineageJobActivities } from '../../../activities/continual/jobs';
import { commitActivities } from '../../../activities/stages/commit';
import { RECIPES } from '../../../activities/recipes';
import { loadWorkerEnv } from '../../../config/env';
import { resolveRunConfig, type RunConfig } from '../../../config/schema';
import type { IterationMetrics } from '../../../contracts/selfplay';
import type { LineageRecord } from '../../../contracts/lineage';

const config = (): RunConfig => {
  const r = resolveRunConfig({ recipe: 'spice' });
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.config;
};

const metrics = { recipe: {}, train: {}, stages: {}, reusedUnits: 0 } as unknown as IterationMetrics;

/**
 * A continual job's run that an operator rolled back: the lineage's bookkeeping must follow the iterations
 * the run kept (activities/stages/lineage.ts keptManifest), not the abandoned ones still in storage.
 */
describe('continual jobs on a run that rolled back', () => {
  const store = new LocalStore(mkdtempSync(path.join(os.tmpdir(), 'lineage-jobs-')));
  const deps = { store, env: loadWorkerEnv({}), inference: new InferencePool(), recipes: RECIPES };
  const commits = commitActivities(deps);
  const jobs = lineageJobActivities(deps);

  /** Iteration `n` of storage id `runId`, planned from `docs`, committed at policy version `version`. */
  const iteration = async (runId: string, n: number, version: number, docs: string[]) => {
    await putJsonl(
      store,
      shardKey(runId, n, 'plan', 0),
      docs.map((docId) => ({ docId })),
    );
    await commits.commit({
      runId,
      iteration: n,
      config: config(),
      policies: { policy: { version } },
      metrics,
      artifacts: {},
    });
  };

  beforeAll(async () => {
    // job-1 committed 1 and 2, rolled back to 1, and committed 2 again in job-1.r1.
    await iteration('job-1', 1, 1, ['kept-a']);
    await iteration('job-1', 2, 2, ['abandoned-b']);
    await putJson(store, lineageKey('job-1'), {
      v: 1,
      runId: 'job-1',
      lineages: [{ id: 'job-1' }, { id: 'job-1.r1', from: { lineage: 'job-1', iteration: 1 } }],
    } satisfies LineageRecord);
    await iteration('job-1.r1', 2, 5, ['kept-c']);
  });

  test("the run's documents and candidate come from its kept iterations", async () => {
    const recorded = await jobs.recordLineageRun({
      lineage: 'nightly',
      jobId: 'j1',
      runId: 'job-1',
      fromIteration: 1,
    });
    expect(recorded.candidate).toMatchObject({ runId: 'job-1.r1', iteration: 2, policyVersion: 5 });
    expect(recorded.documents).toBe(2);
    expect(await getJson(store, usedDocsKey('nightly'))).toEqual(['kept-a', 'kept-c']);
  });

  test("a lineage's origin named by resumeFrom starts from the run's kept head", async () => {
    const prepared = await jobs.prepareLineageJob({
      lineage: 'fresh',
      jobId: 'j1',
      origin: { runId: 'job-1' },
    });
    expect(prepared.start).toMatchObject({ runId: 'job-1.r1', iteration: 2, policyVersion: 5 });
    // Iteration 2 by number: the kept one (version 5), not the abandoned one still stored under job-1.
    const second = await jobs.prepareLineageJob({
      lineage: 'fresh-second',
      jobId: 'j1',
      origin: { runId: 'job-1', iteration: 2 },
    });
    expect(second.start).toMatchObject({ runId: 'job-1.r1', iteration: 2, policyVersion: 5 });
    const abandoned = await jobs
      .prepareLineageJob({ lineage: 'fresh-2', jobId: 'j1', origin: { runId: 'job-1', iteration: 3 } })
      .catch((e: Error & { type: string }) => e);
    expect(abandoned).toMatchObject({ type: 'InvalidConfig' });
    expect((abandoned as Error).message).toContain('run "job-1" has no committed iteration 3');
  });
});
