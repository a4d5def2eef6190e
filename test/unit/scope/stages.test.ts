import { setMaxListeners } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SCOPE_CALLS } from '../../../activities/clients/llm-protocol';
import { loadCorpus } from '../../../activities/corpus/corpus';
import { buildIndex } from '../../../activities/retrieval/build';
import { loadRetriever } from '../../../activities/retrieval/retriever';
import { filterScope } from '../../../activities/recipes/scope/filter';
import { gateScope } from '../../../activities/recipes/scope/gate';
import { judgeScope } from '../../../activities/recipes/scope/judge';
import { planScope } from '../../../activities/recipes/scope/plan';
import { proposeScope } from '../../../activities/recipes/scope/propose';
import { SEARCHES_COMPLETE } from '../../../activities/recipes/scope/prompts';
import { solveScope } from '../../../activities/recipes/scope/solve';
import type { ScopeUnit } from '../../../activities/recipes/scope/records';
import type { Retriever } from '../../../activities/tools/types';
import { startScriptedLlm, type ScriptedLlm } from '../../support/scripted-llm/server';
import { configFor, recipeTestContext, scriptedEndpoint } from '../../support/recipe-harness';
import { inMemorySegments } from '../../../activities/corpus/segment-source';

const CORPUS = 'test/fixtures/corpus/wiki.jsonl';
const G = 3;

/**
 * SCOPE's stages in process against the scripted model over HTTP (the real client, the loop's chat
 * continuation) and a real BM25 index of the wiki fixture.
 */
describe('SCOPE stages against the scripted model and a BM25 index', () => {
  let llm: ScriptedLlm;
  let dir: string;
  let retriever: Retriever;
  beforeAll(async () => {
    llm = await startScriptedLlm({ invalidTaskRate: 0.4, passRate: { min: 0.2, max: 0.8 } });
    dir = await mkdtemp(path.join(tmpdir(), 'scope-index-'));
    await buildIndex({ corpus: CORPUS, out: dir, kind: 'bm25' });
    retriever = await loadRetriever(dir, { apiKey: 'EMPTY' }, 'bm25');
  });
  afterAll(async () => {
    await llm.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('an iteration: budgets honoured, gates and rubrics from the judge, G solver rollouts, one grading per rubric', async () => {
    const config = configFor({
      recipe: 'scope',
      groupSize: G,
      batchSize: 6,
      corpus: { uri: CORPUS },
      inference: { roles: { judge: { baseUrl: 'http://judge.local/v1', model: 'base', frozen: true } } },
    });
    const endpoint = scriptedEndpoint(llm);
    const parts = new Map<string, unknown>();
    const ctx = recipeTestContext(config, endpoint, { retriever, parts });
    setMaxListeners(0, ctx.signal);
    const corpus = await loadCorpus(CORPUS);
    const planned = await planScope({
      config,
      runId: 'unit',
      iteration: 1,
      corpus: () => Promise.resolve(corpus),
      segments: () => Promise.resolve(inMemorySegments(corpus)),
      state: undefined,
    });
    const plan: ScopeUnit[] = planned.map((u, i) => ({ ...u, unit: i, docIndex: i }));
    const propose = await Promise.all(plan.map((u) => proposeScope(ctx, u)));
    const gate = gateScope(config, plan, propose);
    const solve = await Promise.all(gate.map((g) => solveScope(ctx, g)));
    const judge = await Promise.all(gate.map((g, i) => judgeScope(ctx, g, solve[i])));
    const out = filterScope({ config, runId: 'unit', iteration: 1, state: undefined }, [
      { shard: 0, plan, propose, gate, solve, judge },
    ]);

    const candidates = propose.flatMap((p, i) => p.candidates.map((c) => ({ c, unit: plan[i]! })));
    expect(candidates).toHaveLength(6 * G);
    for (const { c, unit } of candidates) {
      // Never more retrieved searches than the budget; a search past it is answered with the notice.
      expect(c.trajectory.searches.length).toBeLessThanOrEqual(unit.searchBudget);
      const notices = c.trajectory.turns.filter((t) => t.answeredWith === 'notice');
      for (const t of notices) expect(t.observation).toContain(SEARCHES_COMPLETE);
      // Observations are masked: every span covers an <information> block.
      const points = [...c.trajectory.completion];
      for (const [a, b] of c.trajectory.lossMaskSpans)
        expect(points.slice(a, b).join('')).toContain('<information>');
    }
    expect(candidates.some(({ c }) => c.trajectory.turns.some((t) => t.answeredWith === 'notice'))).toBe(
      true,
    );
    const statuses = gate.flatMap((g) => g.candidates.map((c) => c.status));
    expect(statuses).toContain('valid');
    expect(statuses.filter((s) => s !== 'valid').length).toBeGreaterThan(0);

    // Judge calls: two gates per gated task, rubrics per task passing both, one grade per (rollout, rubric) with an answer.
    const stats = llm.stats().byCall;
    const gated = candidates.filter(({ c }) => c.gates).length;
    expect(stats[SCOPE_CALLS.gateIdentifiability]?.requests).toBe(gated);
    expect(stats[SCOPE_CALLS.gateRelevance]?.requests).toBe(gated);
    expect(stats[SCOPE_CALLS.rubrics]?.requests).toBe(candidates.filter(({ c }) => c.rubrics).length);
    const expectedGrades = gate.reduce(
      (n, g, i) =>
        n +
        g.candidates.reduce(
          (m, c, k) =>
            m +
            (judge[i]!.candidates[k]?.rollouts.filter((r) => r.answer !== null).length ?? 0) *
              (c.rubrics?.length ?? 0),
          0,
        ),
      0,
    );
    expect(expectedGrades).toBeGreaterThan(0);
    expect(stats[SCOPE_CALLS.grade]?.requests).toBe(expectedGrades);
    // The Solver never sees the document.
    expect(gate.some((g) => g.candidates.some((c) => (c.solverMessages ?? []).length > 0))).toBe(true);
    for (const g of gate)
      for (const c of g.candidates)
        for (const m of c.solverMessages ?? []) expect(m.content).not.toContain('<source_document>');
    for (const s of solve) for (const c of s.candidates) expect([0, G]).toContain(c.trajectories.length);

    expect(out.metrics.rowsByRole.challenger).toBe(6 * G);
    expect((out.metrics.rowsByRole.solver ?? 0) % G).toBe(0);
    // Every row carries its trajectory's spans: each covers an <information> block, and every block is covered.
    expect(out.rows.some((r) => (r.lossMaskSpans ?? []).length > 0)).toBe(true);
    for (const r of out.rows) {
      expect(r.lossMaskSpans).toBeDefined();
      const points = [...r.completion];
      for (const [a, b] of r.lossMaskSpans!) expect(points.slice(a, b).join('')).toContain('<information>');
      expect(r.lossMaskSpans).toHaveLength(r.completion.split('<information>').length - 1);
    }

    // A retried unit resumes its trajectories from their checkpoints: no Challenger or Solver turn is sampled again.
    const sampled = (call: string) => llm.stats().byCall[call]?.requests ?? 0;
    const before = [sampled(SCOPE_CALLS.challenger), sampled(SCOPE_CALLS.solver)];
    const retried = recipeTestContext(config, endpoint, { retriever, parts });
    setMaxListeners(0, retried.signal);
    const again = await proposeScope(retried, plan[0]!);
    await solveScope(retried, gate[0]!);
    expect([sampled(SCOPE_CALLS.challenger), sampled(SCOPE_CALLS.solver)]).toEqual(before);
    expect(again.candidates.map((c) => c.trajectory)).toEqual(
      propose[0]!.candidates.map((c) => c.trajectory),
    );
  });
});
