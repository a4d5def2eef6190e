import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getJson, getJsonl } from '../../activities/clients/storage/codec';
import { batchKey, manifestKey, shardKey } from '../../activities/clients/storage/keys';
import { seedOf } from '../../activities/lib/rng';
import type { TrainingRow } from '../../activities/clients/trainer-contract';
import { SCOPE_CALLS } from '../../activities/clients/llm-protocol';
import { buildIndex } from '../../activities/retrieval/build';
import { groupAdvantages } from '../../activities/scoring/advantages';
import { isSkipped, type SkippedUnit } from '../../activities/stages/skipped-units';
import type {
  ScopeGated,
  ScopeJudged,
  ScopeProposal,
  ScopeSolved,
  ScopeUnit,
} from '../../activities/recipes/scope/records';
import type { Trajectory } from '../../activities/tools/types';
import type { Manifest } from '../../contracts/selfplay';
import { selfPlayRun } from '../../workflows';
import { fingerprintOf } from '../support/scripted-llm/chat-request';
import { startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm/server';
import { startStack, uniqueId, type TestStack } from '../support/stack';
import { spawnWorker } from '../support/worker-process';
import { waitFor } from '../support/wait';

const B = 4;
const G = 2;
const SHARDS = [0, 1];
const CORPUS = 'test/fixtures/corpus/wiki.jsonl';
const JUDGE_CALLS = [
  SCOPE_CALLS.gateIdentifiability,
  SCOPE_CALLS.gateRelevance,
  SCOPE_CALLS.rubrics,
  SCOPE_CALLS.grade,
];

/**
 * SCOPE end to end on the real stack (Temporal, MinIO, the scripted policy and the recording trainer over
 * HTTP) with a real BM25 index of the wiki fixture and the judge on its own scripted server, as a frozen
 * endpoint. Three iterations: every Challenger rollout becomes a `challenger` row, every selected task G
 * `solver` rows, and the judge's calls (two gates per gated task, rubrics, one grading per rubric) go to the
 * judge's server only.
 */
describe('SCOPE run on the real stack', () => {
  let stack: TestStack;
  let judge: ScriptedLlm;
  let index: string;
  beforeAll(async () => {
    stack = await startStack({ llm: { invalidTaskRate: 0.3, passRate: { min: 0.2, max: 0.8 } } });
    judge = await startScriptedLlm({
      invalidTaskRate: 0.3,
      calls: { [SCOPE_CALLS.grade]: { faults: { garbageContent: 0.1 } } },
    });
    index = await mkdtemp(path.join(tmpdir(), 'scope-it-index-'));
    await buildIndex({ corpus: CORPUS, out: index, kind: 'bm25' });
  });
  afterAll(async () => {
    await Promise.all([stack.close(), judge.close()]);
    await rm(index, { recursive: true, force: true });
  });

  const read = async <T>(runId: string, k: number, stage: string): Promise<T[]> =>
    (await Promise.all(SHARDS.map((s) => getJsonl<T>(stack.store, shardKey(runId, k, stage, s))))).flatMap(
      (r) => r ?? [],
    );

  const scopeConfig = (runId: string, overrides: Record<string, unknown> = {}) =>
    stack.runConfig({
      recipe: 'scope',
      runId,
      seed: 3,
      batchSize: B,
      shardSize: 2,
      groupSize: G,
      corpus: { uri: CORPUS },
      retrieval: { index },
      inference: {
        requestTimeoutSeconds: 10,
        maxRetries: 3,
        roles: { judge: { baseUrl: judge.url, model: 'scripted-policy', frozen: true } },
      },
      // Policies of their own per run: the shared recording trainer versions each policy name separately.
      training: {
        policies: { [`${runId}-c`]: { roles: ['challenger'] }, [`${runId}-s`]: { roles: ['solver'] } },
      },
      scope: { schedule: { mode: 'joint' } },
      ...overrides,
    });

  /** Runs a SCOPE run to its end on this stack's workers. */
  const runScope = (runId: string, config: ReturnType<typeof scopeConfig>) =>
    stack.withWorkers(() =>
      stack.client.workflow.execute(selfPlayRun, {
        workflowId: runId,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [config],
      }),
    );

  test('three iterations: rows per role, the frozen judge gates, writes rubrics and grades on its own endpoint', async () => {
    const runId = uniqueId('scope');
    const config = scopeConfig(runId);
    const outcome = await runScope(runId, config);
    expect(outcome.lastCommitted).toBe(3);

    let gated = 0;
    let withRubrics = 0;
    let gradings = 0;
    let solverRows = 0;
    let solverSteps = 0;
    const documents = new Set<string>();
    for (const k of [1, 2, 3]) {
      const manifest = await getJson<Manifest>(stack.store, manifestKey(runId, k));
      expect(manifest?.recipe).toBe('scope');
      // Two independently versioned policies, each stepped once per iteration on its own rows.
      expect(manifest?.policies[`${runId}-c`]?.version).toBe(k);
      const [plan, propose, gate, judged] = await Promise.all([
        read<ScopeUnit>(runId, k, 'plan'),
        read<ScopeProposal>(runId, k, 'propose'),
        read<ScopeGated>(runId, k, 'gate'),
        read<ScopeJudged>(runId, k, 'judge'),
      ]);
      expect(plan).toHaveLength(B);
      for (const u of plan) documents.add(u.segmentId);
      const candidates = propose.flatMap((p) => p.candidates);
      expect(candidates).toHaveLength(B * G);
      gated += candidates.filter((c) => c.gates).length;
      withRubrics += candidates.filter((c) => c.rubrics).length;
      // A task is graded once per rubric for each of its rollouts with an answer.
      gate.forEach((g, i) =>
        g.candidates.forEach((c, j) => {
          const rollouts = judged[i]!.candidates[j]!.rollouts;
          if (c.status === 'valid') expect(rollouts).toHaveLength(G);
          for (const r of rollouts) expect(r.grades).toHaveLength(r.answer === null ? 0 : c.rubrics!.length);
          gradings += rollouts.reduce((n, r) => n + r.grades.length, 0);
        }),
      );

      const challenger = (await getJsonl<TrainingRow>(stack.store, batchKey(runId, k, `${runId}-c`)))!;
      const solver = (await getJsonl<TrainingRow>(stack.store, batchKey(runId, k, `${runId}-s`)))!;
      const rows = [...challenger, ...solver];
      expect(new Set(challenger.map((r) => r.role))).toEqual(new Set(['challenger']));
      expect(solver.every((r) => r.role === 'solver')).toBe(true);
      // The Solver steps only in iterations that selected a task for it.
      if (solver.length > 0) solverSteps++;
      expect(manifest?.policies[`${runId}-s`]?.version).toBe(solverSteps);
      expect(challenger).toHaveLength(B * G);
      expect(challenger.length + solver.length).toBe(rows.length);
      expect(solver.length).toBe(G * (manifest!.metrics.recipe.extra.solverTasks ?? -1));
      solverRows += solver.length;
      const groups = new Map<string, TrainingRow[]>();
      for (const r of rows) groups.set(r.group, [...(groups.get(r.group) ?? []), r]);
      for (const group of groups.values()) {
        expect(group).toHaveLength(G);
        const expected = groupAdvantages(
          'grpo',
          group.map((r) => r.reward),
        );
        group.forEach((r, j) => expect(r.advantage).toBeCloseTo(expected[j]!, 9));
      }
      // The environment's text is masked out of every row, and only it.
      for (const r of rows) {
        const points = [...r.completion];
        for (const [a, b] of r.lossMaskSpans ?? [])
          expect(points.slice(a, b).join('')).toMatch(/^\n<information>/);
      }
      expect(rows.some((r) => (r.lossMaskSpans ?? []).length > 0)).toBe(true);
    }
    // Consecutive iterations draw different documents (16 documents, 4 per iteration).
    expect(documents.size).toBe(3 * B);
    expect(solverRows).toBeGreaterThan(0);
    expect(gated).toBeGreaterThan(withRubrics);

    const policy = stack.llm.stats().byCall;
    const judging = judge.stats().byCall;
    for (const call of JUDGE_CALLS) expect(policy[call]).toBeUndefined();
    expect(judging[SCOPE_CALLS.challenger]).toBeUndefined();
    expect(judging[SCOPE_CALLS.solver]).toBeUndefined();
    expect(judging[SCOPE_CALLS.gateIdentifiability]?.requests).toBe(gated);
    expect(judging[SCOPE_CALLS.gateRelevance]?.requests).toBe(gated);
    expect(judging[SCOPE_CALLS.rubrics]?.requests).toBe(withRubrics);
    expect(judging[SCOPE_CALLS.grade]?.requests).toBe(gradings);
    expect(judge.stats().faults.garbageContent).toBeGreaterThan(0);
    expect(policy[SCOPE_CALLS.challenger]?.requests).toBeGreaterThan(B * G * 3);
  });

  test('a worker SIGKILLed while solving: checkpointed Solver turns are never sampled again', async () => {
    const runId = uniqueId('scope-crash');
    // Forget the first test's requests, and make solving slow enough to kill in the middle of it.
    stack.llm.reset();
    stack.llm.configure({ capacity: 4, calls: { [SCOPE_CALLS.solver]: { latencyMs: 300 } } });
    const config = scopeConfig(runId, {
      seed: 4,
      iterations: 2,
      timeouts: { heartbeatSeconds: 3, activityMaxAttempts: 10 },
    });
    const checkpointsOf = async (): Promise<string[]> => {
      const keys: string[] = [];
      for (const shard of SHARDS) {
        const key = shardKey(runId, 1, 'solve', shard);
        if (await stack.store.exists(key)) continue;
        const parts = await stack.store.list(`${key.replace(/\.jsonl\.gz$/, '')}/`);
        keys.push(...parts.filter((p) => /\/traj-solver-\d+-\d+\.json\.gz$/.test(p)));
      }
      return keys;
    };
    let worker = spawnWorker(stack.workerEnv);
    const saved = new Map<string, Trajectory>();
    try {
      const handle = await stack.client.workflow.start(selfPlayRun, {
        workflowId: runId,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [config],
      });
      await waitFor(
        'a Solver trajectory checkpointed in a shard still solving',
        async () => {
          const keys = await checkpointsOf();
          for (const key of keys) {
            const t = await getJson<Trajectory>(stack.store, key);
            if (t && t.turns.length > 0) return true;
          }
          return false;
        },
        120_000,
      );
      await worker.stop('SIGKILL');
      for (const key of await checkpointsOf()) {
        const t = await getJson<Trajectory>(stack.store, key);
        if (t && t.turns.length > 0) saved.set(key, t);
      }
      worker = spawnWorker(stack.workerEnv);
      expect((await handle.result()).lastCommitted).toBe(2);
    } finally {
      stack.llm.configure({ capacity: 64, calls: { [SCOPE_CALLS.solver]: { latencyMs: 0 } } });
      await worker.stop('SIGKILL');
    }

    // Every turn a checkpoint held before the kill was requested exactly once: the retried shard resumed it.
    expect(saved.size).toBeGreaterThan(0);
    // Units are numbered within their shard: the gate record of (shard, unit) holds the Solver's prompt.
    const gates = await Promise.all(
      SHARDS.map(
        async (shard) => (await getJsonl<ScopeGated>(stack.store, shardKey(runId, 1, 'gate', shard)))!,
      ),
    );
    const counts = stack.llm.stats().fingerprintCounts;
    let turns = 0;
    for (const [key, t] of saved) {
      const [, shard, unit, k, j] = /shard-(\d+)\/unit-(\d+)\/traj-solver-(\d+)-(\d+)\.json\.gz$/
        .exec(key)!
        .map(Number);
      const gated = gates[shard!]!.find((g) => g.unit === unit)!;
      const messages = gated.candidates[k!]!.solverMessages!;
      const seed = seedOf(4, 1, 'scope-solver', gated.docIndex, k!, j!);
      t.turns.forEach((_, i) => {
        const prefix = t.turns
          .slice(0, i)
          .map((u) => u.text + (u.observation ?? ''))
          .join('');
        const sent = i === 0 ? messages : [...messages, { role: 'assistant', content: prefix }];
        const fp = fingerprintOf(SCOPE_CALLS.solver, sent, seedOf(seed, 'search-turn', i), 1, i > 0);
        expect(counts[fp]).toBe(1);
        turns++;
      });
    }
    expect(turns).toBeGreaterThan(0);
    const manifest = await getJson<Manifest>(stack.store, manifestKey(runId, 1));
    expect(manifest?.metrics.recipe.rowsByRole.challenger).toBe(B * G);
  });

  test("the paper's stages: Challenger steps against a frozen Solver, then Solver steps on freshly selected tasks", async () => {
    const runId = uniqueId('scope-stages');
    const schedule = {
      stageSteps: 1,
      solverTasks: 2,
      filterRollouts: 2,
      candidatesPerRound: 4,
      maxRounds: 3,
    };
    const config = scopeConfig(runId, { iterations: 4, seed: 5, scope: { schedule } });
    const outcome = await runScope(runId, config);
    expect(outcome.lastCommitted).toBe(4);
    const manifests = await Promise.all(
      [1, 2, 3, 4].map(async (k) => (await getJson<Manifest>(stack.store, manifestKey(runId, k)))!),
    );
    expect(manifests.map((m) => m.schedule)).toEqual([
      { stage: 'challenger', round: 1, stageIteration: 1 },
      { stage: 'solver', round: 1, stageIteration: 1 },
      { stage: 'challenger', round: 2, stageIteration: 1 },
      { stage: 'solver', round: 2, stageIteration: 1 },
    ]);
    const records = async <T>(m: Manifest, stage: string): Promise<T[]> =>
      (await Promise.all((m.artifacts[stage] ?? []).map((key) => getJsonl<T>(stack.store, key)))).flatMap(
        (r) => r ?? [],
      );
    const documents = new Set<string>();
    let solverVersion = 0;
    let kept = 0;
    for (const [i, m] of manifests.entries()) {
      const k = i + 1;
      const [challenger = [], solver = []] = await Promise.all(
        [`${runId}-c`, `${runId}-s`].map(
          async (p) => (await getJsonl<TrainingRow>(stack.store, batchKey(runId, k, p))) ?? [],
        ),
      );
      const [plan, propose, solved, judged] = await Promise.all([
        Promise.all(
          (m.artifacts.propose ?? []).map((key) =>
            getJsonl<ScopeUnit>(stack.store, key.replace('/propose/', '/plan/')),
          ),
        ).then((r) => r.flatMap((x) => x ?? [])),
        records<ScopeProposal>(m, 'propose'),
        records<ScopeSolved>(m, 'solve'),
        records<ScopeJudged>(m, 'judge'),
      ]);
      // A round's steps use documents of their own (its 4 + at most 12 fill the 16-document corpus once).
      if (m.schedule?.stage === 'challenger') documents.clear();
      for (const u of plan) {
        expect(documents.has(u.segmentId)).toBe(false);
        documents.add(u.segmentId);
      }
      if (m.schedule?.stage === 'challenger') {
        // G Challenger rows per document; the Solver is frozen: its N_train = G rollouts only measure ḡ.
        expect(plan).toHaveLength(B);
        expect(propose.every((p) => p.candidates.length === G)).toBe(true);
        expect(challenger).toHaveLength(B * G);
        expect(solver).toHaveLength(0);
        expect(m.policies[`${runId}-c`]?.version).toBe(m.schedule.round);
        expect(m.policies[`${runId}-s`]?.version).toBe(solverVersion);
        expect(m.metrics.rounds).toBeUndefined();
        continue;
      }
      // A Solver step: rounds of 4 fresh candidates (one task per document) until 2 are kept, at most 3.
      const rounds = m.metrics.rounds ?? 0;
      expect(rounds).toBeGreaterThanOrEqual(1);
      expect(plan).toHaveLength(4 * rounds);
      expect(propose.every((p) => p.candidates.length === 1)).toBe(true);
      const keptHere = judged.flatMap((j) => j.candidates).filter((c) => c.training).length;
      expect(keptHere >= 2 || rounds === 3).toBe(true);
      // It stopped at the first round that brought the kept tasks to 2: the earlier rounds kept fewer.
      const keptBefore = judged.filter((r) => r.docIndex < 4 * (rounds - 1) && r.candidates[0]?.training);
      expect(keptBefore.length).toBeLessThan(2);
      solved.forEach((s, u) =>
        s.candidates.forEach((c, j) => {
          const graded = judged[u]!.candidates[j]!;
          // N_filter rollouts select; a kept task brings G fresh ones, graded, for training.
          if (c.trajectories.length > 0) expect(c.trajectories).toHaveLength(2);
          if (graded.training) expect(graded.training.trajectories).toHaveLength(G);
        }),
      );
      const tasks = Math.min(keptHere, 2);
      expect(m.metrics.recipe.extra.solverTasks).toBe(tasks);
      expect(challenger).toHaveLength(0);
      expect(solver).toHaveLength(G * tasks);
      expect(new Set(solver.map((r) => r.role))).toEqual(new Set(tasks ? ['solver'] : []));
      if (tasks > 0) solverVersion++;
      kept += tasks;
      expect(m.policies[`${runId}-s`]?.version).toBe(solverVersion);
      expect(m.policies[`${runId}-c`]?.version).toBe(m.schedule!.round);
    }
    expect(kept).toBeGreaterThan(0);
  });

  test("a document whose judge gate prompt exceeds the judge's context is skipped in propose, and the iteration commits", async () => {
    // Three short wiki documents and one made of all sixteen (about 900 tokens): the relevance gate's prompt
    // holds the source document, so only the long one's is over the 700 tokens that call is given.
    const wiki = (await readFile(CORPUS, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string; text: string });
    const long = { id: 'all-of-wiki', title: 'All of wiki', text: wiki.map((d) => d.text).join('\n\n') };
    const dir = await mkdtemp(path.join(tmpdir(), 'scope-it-context-'));
    const corpus = path.join(dir, 'corpus.jsonl');
    await writeFile(corpus, [...wiki.slice(0, 3), long].map((d) => JSON.stringify(d)).join('\n') + '\n');
    await buildIndex({ corpus, out: path.join(dir, 'index'), kind: 'bm25' });

    const runId = uniqueId('scope-context');
    // Every Challenger rollout writes a task, so every document asks the judge's gates.
    stack.llm.configure({ invalidTaskRate: 0 });
    judge.configure({ calls: { [SCOPE_CALLS.gateRelevance]: { contextTokens: 700 } } });
    try {
      const config = scopeConfig(runId, {
        iterations: 1,
        corpus: { uri: corpus },
        retrieval: { index: path.join(dir, 'index') },
      });
      const outcome = await runScope(runId, config);
      expect(outcome.lastCommitted).toBe(1);
      expect(outcome.recent.at(-1)?.summary.skippedContextLength).toBe(1);
    } finally {
      stack.llm.configure({ invalidTaskRate: 0.3 });
      judge.configure({ calls: { [SCOPE_CALLS.gateRelevance]: { contextTokens: Number.MAX_SAFE_INTEGER } } });
      await rm(dir, { recursive: true, force: true });
    }
    const manifest = await getJson<Manifest>(stack.store, manifestKey(runId, 1));
    expect(manifest!.metrics.recipe.extra.skippedContextLength).toBe(1);
    const [plan, propose] = await Promise.all([
      read<ScopeUnit>(runId, 1, 'plan'),
      read<ScopeProposal | SkippedUnit>(runId, 1, 'propose'),
    ]);
    const skipped = propose.filter(isSkipped);
    expect(skipped).toEqual([
      expect.objectContaining({
        skipped: 'context_length',
        stage: 'propose',
        reason: expect.stringMatching(/maximum context length is 700 tokens/) as unknown,
      }),
    ]);
    expect(plan.find((u) => u.unit === skipped[0]!.unit)?.docId).toBe(long.id);
    // The other three documents train the Challenger, G rows each; the long one has none.
    const challenger = (await getJsonl<TrainingRow>(stack.store, batchKey(runId, 1, `${runId}-c`)))!;
    expect(challenger).toHaveLength((B - 1) * G);
  });
});
