import { readFileSync } from 'node:fs';
import path from 'node:path';
import { getJson, getJsonl } from '../../activities/clients/storage/codec';
import { manifestKey, batchKey, shardKey } from '../../activities/clients/storage/keys';
import { writeObjectAtUri } from '../../activities/clients/storage';
import type { TrainingRow } from '../../activities/clients/trainer-contract';
import { MAE_CALLS } from '../../activities/clients/llm-protocol';
import { planMae } from '../../activities/recipes/mae/plan';
import { ZERO_SETTING_SEEDS } from '../../activities/recipes/mae/zero-seeds';
import type {
  MaeGated,
  MaeJudged,
  MaePlanUnit,
  MaeSolved,
  MaeState,
} from '../../activities/recipes/mae/records';
import { answerForJudge } from '../../activities/recipes/mae/parse';
import { resolveRunConfig } from '../../config/schema';
import type { Manifest } from '../../contracts/selfplay';
import { selfPlayRun } from '../../workflows';
import { startStack, uniqueId, type TestStack } from '../support/stack';
import { spawnWorker } from '../support/worker-process';
import { waitFor } from '../support/wait';

const B = 8;
const SHARDS = [0, 1];

/**
 * MAE end to end on the real stack (Temporal, MinIO, the scripted LLM and the recording trainer over HTTP):
 * the pools D and P are the recipe state, so every check here is about what was committed at iteration k
 * and what iteration k+1 (or a run resumed from k) used.
 */
describe('MAE run on the real stack', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  const configFor = (runId: string, overrides: Record<string, unknown> = {}) =>
    stack.runConfig({
      recipe: 'mae',
      batchSize: B,
      shardSize: 4,
      groupSize: 3,
      seed: 5,
      training: { policy: runId },
      ...overrides,
    });

  const run = (config: Record<string, unknown>) =>
    stack.client.workflow.execute(selfPlayRun, {
      workflowId: config.runId as string,
      taskQueue: `${stack.queuePrefix}-orchestrator`,
      args: [config],
    });

  const manifest = async (runId: string, k: number) =>
    (await getJson<Manifest>(stack.store, manifestKey(runId, k))) as Manifest;

  /** The pools committed at iteration k. */
  const poolsAt = async (runId: string, k: number): Promise<MaeState> => {
    const key = (await manifest(runId, k)).recipeStateKey;
    expect(key).toBeDefined();
    return (await getJson<MaeState>(stack.store, key as string)) as MaeState;
  };

  const stage = async <T>(runId: string, k: number, name: string): Promise<T[]> =>
    (await Promise.all(SHARDS.map((s) => getJsonl<T>(stack.store, shardKey(runId, k, name, s))))).flatMap(
      (rows) => rows ?? [],
    );

  const batch = async (runId: string, k: number, policy = runId) =>
    (await getJsonl<TrainingRow>(stack.store, batchKey(runId, k, policy))) ?? [];

  /**
   * Iteration k+1 used exactly the pools committed at k: its stored plan is what the plan draws from those
   * pools, and the pools it committed are those pools grown by its own accepted questions and pairs.
   */
  async function expectIterationUsed(
    runId: string,
    k: number,
    config: Record<string, unknown>,
    before: MaeState | undefined,
  ): Promise<void> {
    const resolved = resolveRunConfig(config);
    if (!resolved.ok) throw new Error(resolved.problems.join('; '));
    const plan = await stage<MaePlanUnit>(runId, k, 'plan');
    const replanned = await planMae({
      config: resolved.config,
      runId,
      iteration: k,
      corpus: () => Promise.reject(new Error('no corpus')),
      segments: () => Promise.reject(new Error('no corpus')),
      state: before,
    });
    expect(plan.map(({ unit: _u, docIndex: _d, ...rest }) => rest)).toEqual(replanned);

    const after = await poolsAt(runId, k);
    const start = before ?? after;
    const gated = await stage<MaeGated>(runId, k, 'gate');
    const solved = await stage<MaeSolved>(runId, k, 'solve');
    const newQuestions = gated.filter((g) => g.accepted).map((g) => g.question as string);
    expect(after.questions.slice(0, start.questions.length)).toEqual(start.questions);
    expect(after.questions.slice(start.questions.length)).toEqual(
      [...new Set(newQuestions)].filter((q) => !start.questions.includes(q)),
    );
    expect(after.pairs).toEqual([
      ...(before?.pairs ?? []),
      ...solved.map((s, i) => ({
        question: gated[i]?.solverQuestion,
        answer: answerForJudge(s.solver.completion),
      })),
    ]);
  }

  /** Task-Relative REINFORCE++: within each role the advantages have mean 0 and std 1 (or are all 0). */
  function expectRoleWhitened(rows: TrainingRow[]): void {
    for (const role of new Set(rows.map((r) => r.role))) {
      const a = rows.filter((r) => r.role === role).map((r) => r.advantage);
      const mean = a.reduce((x, y) => x + y, 0) / a.length;
      const std = Math.sqrt(a.reduce((x, y) => x + (y - mean) ** 2, 0) / a.length);
      expect(mean).toBeCloseTo(0, 6);
      if (a.some((v) => v !== 0)) expect(std).toBeCloseTo(1, 3);
    }
  }

  test('zero setting: 3 iterations from the 16 built-in seeds, pools committed and used, fallbacks counted', async () => {
    const runId = uniqueId('mae-zero');
    const config = configFor(runId, { runId, iterations: 3 });
    const outcome = await stack.withWorkers(() => run(config));
    expect(outcome.lastCommitted).toBe(3);
    const steps = stack.trainer.stats().steps.filter((s) => s.runId === runId);
    expect(steps.map((s) => s.iteration)).toEqual([1, 2, 3]);

    let before: MaeState | undefined;
    let fallbacks = 0;
    for (const k of [1, 2, 3]) {
      await expectIterationUsed(runId, k, config, before);
      const pools = await poolsAt(runId, k);
      expect(pools.seedCount).toBe(16);
      expect(pools.questions.slice(0, 16)).toEqual(ZERO_SETTING_SEEDS);
      const m = (await manifest(runId, k)).metrics.recipe;
      expect(m.documents).toBe(B);
      expect(m.extra['pool.questions']).toBe(pools.questions.length);
      expect(m.extra['pool.pairs']).toBe(pools.pairs.length);
      fallbacks +=
        m.extra['fallback.quality']! + m.extra['fallback.difficulty']! + m.extra['fallback.solver']!;

      const rows = await batch(runId, k);
      const roles = rows.map((r) => r.role);
      expect(roles.filter((r) => r === 'proposer')).toHaveLength(B);
      expect(roles.filter((r) => r === 'solver')).toHaveLength(B);
      // The empty pool P at the start: no Judge samples until the first pairs are committed.
      expect(roles.filter((r) => r === 'judge')).toHaveLength(k === 1 ? 0 : B);
      expect(m.extra['judge.unitsWithoutPair']).toBe(k === 1 ? B : 0);
      expectRoleWhitened(rows);
      before = pools;
    }
    // D grew through the gate over the run; P holds every trained pair.
    expect(before?.questions.length).toBeGreaterThan(16);
    expect(before?.pairs).toHaveLength(3 * B);
    // The scripted judge writes malformed scores at the default format-error rate; each one is counted.
    expect(fallbacks).toBeGreaterThan(0);
    const judged = (await Promise.all([1, 2, 3].map((k) => stage<MaeJudged>(runId, k, 'judge')))).flat();
    const counted = judged
      .flatMap((j) => [...(j.difficultyScores ?? []), j.solverScore])
      .filter((s) => s.fallback);
    const proposed = [1, 2, 3].map((k) => stage<{ quality?: { fallback?: string } }>(runId, k, 'propose'));
    const qualityFallbacks = (await Promise.all(proposed)).flat().filter((p) => p.quality?.fallback).length;
    expect(counted.length + qualityFallbacks).toBe(fallbacks);
  });

  test('a seed file on S3 with reference ratio 1, every judgement malformed: neutral scores, an all-equal Judge batch', async () => {
    const seedsUri = `${stack.storageUri}/fixtures/mae-seed-questions.jsonl`;
    await writeObjectAtUri(
      seedsUri,
      readFileSync(path.resolve(__dirname, '../fixtures/mae/seed-questions.jsonl')),
    );
    const runId = uniqueId('mae-malformed');
    const config = configFor(runId, {
      runId,
      iterations: 2,
      mae: { seedQuestions: seedsUri, referenceRatio: 1 },
    });
    const judgeCalls = [MAE_CALLS.judgeAnswer, MAE_CALLS.judgeQuestion];
    stack.llm.configure({
      calls: Object.fromEntries(judgeCalls.map((c) => [c, { faults: { garbageContent: 1 } }])),
    });
    try {
      const outcome = await stack.withWorkers(() => run(config));
      expect(outcome.lastCommitted).toBe(2);
    } finally {
      stack.llm.configure({
        calls: Object.fromEntries(judgeCalls.map((c) => [c, { faults: { garbageContent: 0 } }])),
      });
    }
    let before: MaeState | undefined;
    for (const k of [1, 2]) {
      await expectIterationUsed(runId, k, config, before);
      const pools = await poolsAt(runId, k);
      expect(pools.seedCount).toBe(36);
      const m = (await manifest(runId, k)).metrics.recipe;
      // Every judgement fell back to 0.5, which is below the gate: nothing entered D.
      expect(m.extra['fallback.rate']).toBe(1);
      expect(m.extra['pool.added']).toBe(0);
      expect(pools.questions).toHaveLength(36);
      expect(m.extra['proposer.withReference']).toBe(B);
      const plan = await stage<MaePlanUnit>(runId, k, 'plan');
      expect(plan.every((u) => u.reference !== undefined && pools.questions.includes(u.reference))).toBe(
        true,
      );

      const rows = await batch(runId, k);
      for (const r of rows.filter((row) => row.role === 'solver'))
        expect([0.25, 0.5, 0.75]).toContain(r.reward); // ½·0.5 + ½·format
      const judges = rows.filter((r) => r.role === 'judge');
      expect(judges).toHaveLength(k === 1 ? 0 : B);
      // The trained Judge wrote no score either: every reward is 0 and so is every advantage.
      for (const r of judges) expect(r).toMatchObject({ reward: 0, advantage: 0 });
      expectRoleWhitened(rows);
      before = pools;
    }
  });

  test('a worker SIGKILLed while iteration 2 judges: the run finishes on the pools it committed, and a run resumed from iteration 1 starts from them', async () => {
    const runId = uniqueId('mae-crash');
    const config = configFor(runId, {
      runId,
      iterations: 3,
      timeouts: { heartbeatSeconds: 3, activityMaxAttempts: 10 },
    });
    // Judging is slow enough (two completions at a time) that the worker dies in the middle of it.
    stack.llm.configure({ capacity: 2, calls: { [MAE_CALLS.judgeAnswer]: { latencyMs: 100 } } });
    let worker = spawnWorker(stack.workerEnv);
    try {
      const handle = await stack.client.workflow.start(selfPlayRun, {
        workflowId: runId,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [config],
      });
      const judgePrefix = shardKey(runId, 2, 'judge', 0).replace(/shard-0000\.jsonl\.gz$/, '');
      await waitFor(
        'iteration 2 judge units in storage',
        async () => (await stack.store.list(judgePrefix)).some((k) => k.includes('/unit-')),
        120_000,
      );
      await worker.stop('SIGKILL');
      const savedKeys = (await stack.store.list(judgePrefix)).filter((k) => k.includes('/unit-'));
      const saved = await Promise.all(savedKeys.map((k) => getJson<MaeJudged>(stack.store, k)));
      const shardsDone = await Promise.all(
        SHARDS.map((s) => stack.store.exists(shardKey(runId, 2, 'judge', s))),
      );
      expect(shardsDone.every(Boolean)).toBe(false);

      worker = spawnWorker(stack.workerEnv);
      const outcome = await handle.result();
      expect(outcome.lastCommitted).toBe(3);

      // Judged units stored before the crash were kept as they were, not judged again.
      const judged = await stage<MaeJudged>(runId, 2, 'judge');
      for (const unit of saved) expect(judged).toContainEqual(unit);
      expect((await manifest(runId, 2)).metrics.reusedUnits).toBeGreaterThanOrEqual(saved.length);
      const steps = stack.trainer.stats().steps.filter((s) => s.runId === runId);
      expect(steps.map((s) => s.iteration)).toEqual([1, 2, 3]);
      for (const s of steps) expect(stack.trainer.stats().appliedByKey[s.key]).toBe(1);
    } finally {
      await worker.stop('SIGKILL');
      stack.llm.configure({ capacity: 64, calls: { [MAE_CALLS.judgeAnswer]: { latencyMs: 0 } } });
    }
    let before: MaeState | undefined;
    for (const k of [1, 2, 3]) {
      await expectIterationUsed(runId, k, config, before);
      before = await poolsAt(runId, k);
    }

    // A new run forked from iteration 1 plans its iteration 2 from the pools committed at 1, and (the
    // scripted model being deterministic) commits the same pools the crashed run committed at 2.
    const resumedId = uniqueId('mae-resumed');
    const resumed = configFor(resumedId, {
      runId: resumedId,
      iterations: 2,
      resumeFrom: { runId, iteration: 1 },
      training: { policy: runId },
    });
    const outcome = await stack.withWorkers(() => run(resumed));
    expect(outcome.lastCommitted).toBe(2);
    expect(await getJson(stack.store, manifestKey(resumedId, 1))).toBeUndefined();
    const committedAt1 = await poolsAt(runId, 1);
    await expectIterationUsed(resumedId, 2, resumed, committedAt1);
    expect(await poolsAt(resumedId, 2)).toEqual(await poolsAt(runId, 2));
  });
});
