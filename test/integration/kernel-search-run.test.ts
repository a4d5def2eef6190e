import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getJsonl } from '../../activities/clients/storage/codec';
import { shardKey } from '../../activities/clients/storage/keys';
import type { TrainingRow } from '../../activities/clients/trainer-contract';
import { buildIndex } from '../../activities/retrieval/build';
import type { ScopeProposal } from '../../activities/recipes/scope/records';
import type { SspProposal } from '../../activities/recipes/ssp/records';
import { buildSearchingModel } from '../support/kernel-process';
import { servedVersion, trainedVersion, withKernelRun, type KernelRun } from '../support/kernel-run';

/**
 * The search-agent recipes on real training kernels for one iteration each: every role samples from a tiny
 * model through the multi-turn search loop (a turn that closes a search call is continued on the kernel with
 * `continue_final_message`), searches a real BM25 index built here, and trains on the kernel with the
 * observations masked out; each trained policy's kernel then serves the committed version.
 *
 * A random model never closes a search call, so the model is the kernel's tiny one rewritten into a seeded
 * bigram chain (test/support/searching_model.py): after a newline — the end of the generation prompt and of
 * every observation — it writes `<search> river</search>` (75 %), `<task> city</task>` (15 %) or stops (10 %).
 * Rollouts of one prompt then differ in their searches and tasks, and earn different format rewards.
 */
describe('search-agent recipes on the training kernel', () => {
  let model: string;
  let indexRoot: string;
  beforeAll(async () => {
    model = buildSearchingModel({ query: 'river', task: 'city', stopShare: 0.1, taskShare: 0.15 });
    indexRoot = await mkdtemp(path.join(tmpdir(), 'kernel-search-index-'));
  });
  afterAll(() => rm(indexRoot, { recursive: true, force: true }));

  const index = async (corpus: string, name: string): Promise<string> => {
    const out = path.join(indexRoot, name);
    await buildIndex({ corpus, out, kind: 'bm25' });
    return out;
  };
  /** Searches return one short passage, so a trajectory has room for several turns in 128 tokens. */
  const retrieval = async (corpus: string, name: string) => ({
    index: await index(corpus, name),
    topK: 1,
    passageTokens: 16,
  });
  const proposals = async <T>(run: KernelRun, shards: number): Promise<T[]> =>
    (
      await Promise.all(
        Array.from({ length: shards }, (_, s) =>
          getJsonl<T>(run.store, shardKey(run.runId, 1, 'propose', s)),
        ),
      )
    ).flatMap((r) => r ?? []);

  test('one iteration of SSP: proposer, verifier, solver and judge on one kernel', () =>
    withKernelRun({ model, name: 'kernel-ssp', policies: (runId) => [runId] }, async (run) => {
      const outcome = await run.execute({
        ...run.baseConfig,
        recipe: 'ssp',
        batchSize: 2,
        shardSize: 2,
        groupSize: 2,
        retrieval: await retrieval('test/fixtures/ssp/corpus.jsonl', 'ssp'),
        sampling: { maxTokens: 128 },
        ssp: {
          maxTurns: 3,
          verifier: { temperature: 0.1, maxTokens: 8 },
          judge: { temperature: 0.1, maxTokens: 8 },
        },
        training: { policy: run.runId },
      });
      expect(outcome.lastCommitted).toBe(1);
      const manifest = await run.manifest(1);
      expect(manifest?.recipe).toBe('ssp');
      const rows = await run.rows(1, run.runId);
      const rowCount = Object.values(manifest?.metrics.recipe.rowsByRole ?? {}).reduce((a, b) => a + b, 0);
      expect(rows).toHaveLength(rowCount);
      // Every answer slot's proposer trajectory is a row (reward 0: the chain writes no question).
      expect(rows.filter((r) => r.role === 'proposer')).toHaveLength(2);
      expectMaskedObservations(rows);
      // The proposer searched the real index. A search is answered only when a turn can follow, so each
      // observation was followed by a request continuing the message on the kernel.
      const proposed = await proposals<SspProposal>(run, 1);
      expect(proposed).toHaveLength(2);
      const searched = proposed.filter((p) => p.trajectory.information.length > 0);
      expect(searched.length).toBeGreaterThan(0);
      for (const p of searched) {
        expect(p.trajectory.searches[0]).toBe('river');
        expect(p.trajectory.information[0]).toMatch(/^Doc 1 \(Title: "[^"]+"\) /);
      }
      expect(manifest?.metrics.train[run.runId]?.tokens).toBeGreaterThan(0);
      await expectPolicyAt(run, run.runId, rows.length > 0 ? 1 : 0);
    }));

  test('one iteration of SCOPE: Challenger and Solver on kernels of their own, the judge on a frozen third', () =>
    withKernelRun(
      {
        model,
        name: 'kernel-scope',
        policies: (runId) => [`${runId}-c`, `${runId}-s`, `${runId}-judge`],
      },
      async (run) => {
        const [challenger, solver, judge] = [`${run.runId}-c`, `${run.runId}-s`, `${run.runId}-judge`];
        const endpoint = (policy: string) => ({ baseUrl: `${run.kernels[policy]!.url}/v1`, model: policy });
        const base = run.baseConfig as { inference: Record<string, unknown> };
        const corpus = 'test/fixtures/corpus/wiki.jsonl';
        const outcome = await run.execute({
          ...base,
          recipe: 'scope',
          batchSize: 2,
          shardSize: 2,
          groupSize: 2,
          corpus: { uri: corpus },
          retrieval: await retrieval(corpus, 'wiki'),
          sampling: { maxTokens: 128 },
          scope: {
            solverMaxSearches: 1,
            judgeSampling: {
              gate: { temperature: 0, maxTokens: 8 },
              rubrics: { temperature: 0, maxTokens: 16 },
              grade: { temperature: 0.6, maxTokens: 8 },
            },
          },
          inference: {
            ...base.inference,
            roles: {
              challenger: endpoint(challenger),
              solver: endpoint(solver),
              judge: { ...endpoint(judge), frozen: true },
            },
          },
          training: {
            policies: {
              [challenger]: { roles: ['challenger'], trainerUrl: run.kernels[challenger]!.url },
              [solver]: { roles: ['solver'], trainerUrl: run.kernels[solver]!.url },
            },
          },
        });
        expect(outcome.lastCommitted).toBe(1);
        const manifest = await run.manifest(1);
        expect(manifest?.recipe).toBe('scope');
        expect(Object.keys(manifest?.policies ?? {}).sort()).toEqual([challenger, solver].sort());
        const challengerRows = await run.rows(1, challenger);
        const solverRows = await run.rows(1, solver);
        // Every Challenger rollout is a row: G per document.
        expect(challengerRows).toHaveLength(2 * 2);
        expect(challengerRows.every((r) => r.role === 'challenger')).toBe(true);
        expect(solverRows.every((r) => r.role === 'solver')).toBe(true);
        expectMaskedObservations([...challengerRows, ...solverRows]);

        const candidates = (await proposals<ScopeProposal>(run, 1)).flatMap((p) => p.candidates);
        expect(candidates).toHaveLength(2 * 2);
        // A continued message searched again: a turn after an observation closed a search call of its own.
        expect(candidates.some((c) => c.trajectory.turns.filter((t) => t.search).length >= 2)).toBe(true);
        // The seeded chain wrote a task somewhere, which the frozen judge gated (reading its own kernel).
        const gated = candidates.filter((c) => c.gates);
        expect(gated.length).toBeGreaterThan(0);
        for (const c of gated) expect(c.task).toBe('city');
        // The rollouts of a document earned different rewards: a real update of the Challenger's weights.
        expect(challengerRows.some((r) => r.advantage !== 0)).toBe(true);
        expect(manifest?.metrics.train[challenger]?.gradNorm).toBeGreaterThan(0);

        await expectPolicyAt(run, challenger, 1);
        await expectPolicyAt(run, solver, solverRows.length > 0 ? 1 : 0);
        expect(outcome.versions).toEqual({ [challenger]: 1, [solver]: solverRows.length > 0 ? 1 : 0 });
        // The frozen judge was sampled but never synced or trained.
        expect(await servedVersion(run.kernels[judge]!, judge)).toBe(0);
        expect(await trainedVersion(run.kernels[judge]!, judge)).toBe(0);
      },
    ));
});

/**
 * `policy` committed at `version`, its kernel trained it to that version and its sampler serves it, and the
 * snapshot of that version was published.
 */
async function expectPolicyAt(run: KernelRun, policy: string, version: number): Promise<void> {
  const manifest = await run.manifest(1);
  expect(manifest?.policies[policy]?.version).toBe(version);
  expect(manifest?.policies[policy]?.snapshot?.version).toBe(version);
  const kernel = run.kernels[policy]!;
  expect(await trainedVersion(kernel, policy)).toBe(version);
  expect(await servedVersion(kernel, policy)).toBe(version);
}

const OBSERVATION = /^\n<information>\n[\s\S]*<\/information>\n\n$/;

/**
 * Rows with an environment observation in their completion carry loss-mask spans, and every span covers
 * exactly one observation block (spans count code points, as the trainer does).
 */
function expectMaskedObservations(rows: readonly TrainingRow[]): void {
  expect(rows.some((r) => (r.lossMaskSpans ?? []).length > 0)).toBe(true);
  for (const row of rows) {
    const points = [...row.completion];
    const observations = row.completion.split('\n<information>\n').length - 1;
    expect(row.lossMaskSpans ?? []).toHaveLength(observations);
    for (const [start, end] of row.lossMaskSpans ?? [])
      expect(points.slice(start, end).join('')).toMatch(OBSERVATION);
  }
}
