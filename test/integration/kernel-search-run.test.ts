import { getJsonl } from '../../activities/clients/storage/codec';
import { shardKey } from '../../activities/clients/storage/keys';
import type { TrainingRow } from '../../activities/clients/trainer-contract';
import type { ScopeProposal } from '../../activities/recipes/scope/records';
import type { SspProposal } from '../../activities/recipes/ssp/records';
import {
  sspAgentModel,
  sspKernelConfig,
  scopeKernelConfig,
  scopeModels,
  scopePolicies,
  searchIndexes,
} from '../support/kernel-search';
import { servedVersion, trainedVersion, withKernelRun, type KernelRun } from '../support/kernel-run';

/**
 * The search-agent recipes on real training kernels for one iteration each: every role samples from a tiny
 * model through the multi-turn search loop (a turn that closes a search call is continued on the kernel with
 * `continue_final_message`), searches a real BM25 index built here, and trains on the kernel with the
 * observations masked out; each trained policy's kernel then serves the committed version. The models are
 * scripted bigram chains (test/support/kernel-search.ts).
 */
describe('search-agent recipes on the training kernel', () => {
  const indexes = searchIndexes();
  afterAll(() => indexes.remove());
  const retrieval = indexes.retrieval;
  const proposals = async <T>(run: KernelRun, shards: number): Promise<T[]> =>
    (
      await Promise.all(
        Array.from({ length: shards }, (_, s) =>
          getJsonl<T>(run.store, shardKey(run.runId, 1, 'propose', s)),
        ),
      )
    ).flatMap((r) => r ?? []);

  test('one iteration of SSP: proposer, verifier, solver and judge on one kernel', () =>
    withKernelRun(
      { model: sspAgentModel(), name: 'kernel-ssp', policies: (runId) => [runId] },
      async (run) => {
        const outcome = await run.execute(
          sspKernelConfig(run, await retrieval('test/fixtures/ssp/corpus.jsonl', 'ssp')),
        );
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
        expectContinued(rows);
        expectTokenExact(rows);
        expect(manifest?.metrics.train[run.runId]).toMatchObject({
          rowsRetokenized: 0,
          tokenExactFraction: 1,
        });
        expect(manifest?.metrics.train[run.runId]?.tokens).toBeGreaterThan(0);
        await expectPolicyAt(run, run.runId, 1);
      },
    ));

  test(
    'one iteration of SCOPE: Challenger and Solver on kernels of their own, the judge on a frozen third',
    () =>
      withKernelRun(
        {
          model: scopeModels(),
          name: 'kernel-scope',
          policies: (runId) => Object.values(scopePolicies(runId)),
        },
        async (run) => {
          const { challenger, solver, judge } = scopePolicies(run.runId);
          const corpus = 'test/fixtures/corpus/wiki.jsonl';
          const outcome = await run.execute(
            scopeKernelConfig(run, {
              corpus,
              retrieval: await retrieval(corpus, 'wiki'),
              // Both roles train in one iteration (the staged schedule runs in kernel-schedules.test.ts).
              scope: { schedule: { mode: 'joint' } },
            }),
          );
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
          // The judge's kernel gated the tasks (its greedy verdict passes both gates) and wrote their rubric.
          const gated = candidates.filter((c) => c.gates);
          expect(gated.length).toBeGreaterThan(0);
          for (const c of gated) {
            expect(c.task).toBe('city');
            expect(c.gates).toEqual({ identifiability: { value: 1 }, relevance: { value: 1 } });
            expect(c.rubrics?.items).toEqual(['city']);
          }
          // Graded at temperature 0.6, some task's Solver rollouts scored differently: it was selected, and
          // both policies took a real step, each on its own kernel.
          expect(solverRows.length).toBeGreaterThan(0);
          expect(solverRows.some((r) => r.completion.endsWith('<answer> history</answer>'))).toBe(true);
          expectContinued(solverRows);
          expectTokenExact([...challengerRows, ...solverRows]);
          for (const policy of [challenger, solver]) {
            expect(manifest?.metrics.train[policy]).toMatchObject({
              rowsRetokenized: 0,
              tokenExactFraction: 1,
            });
            expect(manifest?.metrics.train[policy]?.gradNorm).toBeGreaterThan(0);
            expect(manifest?.metrics.train[policy]?.tokens).toBeGreaterThan(0);
          }

          await expectPolicyAt(run, challenger, 1);
          await expectPolicyAt(run, solver, 1);
          expect(outcome.versions).toEqual({ [challenger]: 1, [solver]: 1 });
          // The frozen judge was sampled (above) but never synced or trained.
          expect(await servedVersion(run.kernels[judge]!, judge)).toBe(0);
          expect(await trainedVersion(run.kernels[judge]!, judge)).toBe(0);
        },
      ),
    600_000,
  );
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

/**
 * Some row's message went on after an observation: the kernel, asked to continue the assistant message
 * (`continue_final_message`), wrote a further search or final tag, which is trained on (not masked).
 */
function expectContinued(rows: readonly TrainingRow[]): void {
  const continued = rows.filter((r) => {
    const spans = r.lossMaskSpans ?? [];
    return spans.length > 0 && [...r.completion].slice(spans[0]![1]).join('').startsWith('<');
  });
  expect(continued.length).toBeGreaterThan(0);
}

/**
 * Token in, token out: every row carries the ids the kernel sampled, turn by turn, and between the turns the
 * observations as inserted text, exactly the masked spans of its completion.
 */
function expectTokenExact(rows: readonly TrainingRow[]): void {
  for (const row of rows) {
    const segments = row.completionTokens ?? [];
    expect(segments.length).toBeGreaterThan(0);
    const points = [...row.completion];
    const masked = (row.lossMaskSpans ?? []).map(([a, b]) => points.slice(a, b).join(''));
    expect(segments.flatMap((s) => ('text' in s ? [s.text] : []))).toEqual(masked);
    const sampled = segments.reduce((n, s) => n + ('ids' in s ? s.ids.length : 0), 0);
    expect(row.behaviourLogprobs).toHaveLength(sampled);
  }
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
