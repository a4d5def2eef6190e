import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { getJson, getJsonl } from '../../activities/clients/storage/codec';
import { batchKey, manifestKey, shardKey } from '../../activities/clients/storage/keys';
import type { TrainingRow } from '../../activities/clients/trainer-contract';
import { EVAL_CALLS, SSP_CALLS } from '../../activities/clients/llm-protocol';
import type { ItemVerdicts } from '../../activities/evaluation/evaluate';
import { seedOf } from '../../activities/lib/rng';
import { buildIndex } from '../../activities/retrieval/build';
import { EMPTY_STATE, nextState } from '../../activities/recipes/ssp/pool';
import { solverMessages } from '../../activities/recipes/ssp/prompts';
import { successRate } from '../../activities/recipes/ssp/rewards';
import { ruleFilter } from '../../activities/recipes/ssp/rules';
import { joinInformation } from '../../activities/recipes/ssp/verification';
import type {
  SspGated,
  SspJudged,
  SspProposal,
  SspSolved,
  SspState,
  SspUnit,
  StoredTrajectory,
} from '../../activities/recipes/ssp/records';
import { zScores } from '../../activities/scoring/advantages';
import type { Trajectory } from '../../activities/tools/types';
import type { Manifest } from '../../contracts/selfplay';
import { selfPlayRun } from '../../workflows';
import { fingerprintOf } from '../support/scripted-llm/chat-request';
import { selfplay } from '../support/cli';
import { startStack, uniqueId, type TestStack } from '../support/stack';
import { BORN_IN, FOUNDED_BY, bridgeQuestion } from '../fixtures/ssp/world';
import { spawnWorker } from '../support/worker-process';
import { waitFor } from '../support/wait';
import { SSP_DEFAULTS } from '../../config/presets/ssp';

const G = 5;
const SHARDS = [0, 1];
const SEED = 11;

interface Stages {
  plan: SspUnit[];
  propose: SspProposal[];
  gate: SspGated[];
  solve: SspSolved[];
  judge: SspJudged[];
}

/**
 * An SSP run end to end on the real stack: Temporal, MinIO, the scripted model speaking the search-tag
 * protocol over HTTP, the recording trainer, and the REAL local BM25 retriever over the fixture corpus
 * (built into a directory before the run). Every stage's records are checked against the spec's rules.
 */
describe('SSP run on the real stack', () => {
  let stack: TestStack;
  let index: string;
  beforeAll(async () => {
    stack = await startStack({ llm: { passRate: { min: 0.2, max: 0.8 }, invalidTaskRate: 0.3 } });
    index = path.join(mkdtempSync(path.join(os.tmpdir(), 'ssp-index-')), 'bm25');
    await buildIndex({ corpus: 'test/fixtures/ssp/corpus.jsonl', out: index, kind: 'bm25' });
  });
  afterAll(() => stack.close());

  const sspConfig = (runId: string, overrides: Record<string, unknown> = {}) =>
    stack.runConfig({
      recipe: 'ssp',
      seed: SEED,
      batchSize: 10,
      shardSize: 5,
      groupSize: G,
      retrieval: { index },
      sampling: { maxTokens: 2048 },
      // A reset every 2 iterations: iteration 2 fills from iteration 1's pool, iteration 3 from an empty one.
      ssp: { replay: { resetEvery: 2 } },
      training: { policy: runId },
      ...overrides,
    });

  const read = async <T>(runId: string, iteration: number, stage: string): Promise<T[]> =>
    (
      await Promise.all(SHARDS.map((s) => getJsonl<T>(stack.store, shardKey(runId, iteration, stage, s))))
    ).flatMap((r) => r ?? []);
  const stages = async (runId: string, k: number): Promise<Stages> => {
    const [plan, propose, gate, solve, judge] = await Promise.all(
      ['plan', 'propose', 'gate', 'solve', 'judge'].map((s) => read<never>(runId, k, s)),
    );
    return { plan, propose, gate, solve, judge } as Stages;
  };
  const committedState = async (runId: string, k: number): Promise<SspState> => {
    const manifest = await getJson<Manifest>(stack.store, manifestKey(runId, k));
    return (await getJson<SspState>(stack.store, manifest!.recipeStateKey!))!;
  };

  test('three iterations: rule filter, fail-closed RAG verification with noise, rewards, masks and the replay pool', async () => {
    const runId = uniqueId('ssp');
    // Garbage from the RAG verifier (no "Answer:" line) and transient 5xx on solver turns (retried).
    stack.llm.configure({
      calls: {
        [SSP_CALLS.ragVerifier]: { faults: { garbageContent: 0.15 } },
        [SSP_CALLS.solver]: { faults: { http500: 0.05 } },
      },
    });
    try {
      const outcome = await stack.withWorkers(() =>
        stack.client.workflow.execute(selfPlayRun, {
          workflowId: runId,
          taskQueue: `${stack.queuePrefix}-orchestrator`,
          args: [sspConfig(runId)],
        }),
      );
      expect(outcome.lastCommitted).toBe(3);
    } finally {
      stack.llm.configure({
        calls: {
          [SSP_CALLS.ragVerifier]: { faults: { garbageContent: 0 } },
          [SSP_CALLS.solver]: { faults: { http500: 0 } },
        },
      });
    }
    expect(stack.llm.stats().faults.http500).toBeGreaterThan(0);

    let before: SspState = EMPTY_STATE;
    const all: Stages[] = [];
    for (const k of [1, 2, 3]) {
      const s = await stages(runId, k);
      all.push(s);
      expect(s.plan).toHaveLength(10);
      expectRealSearch(s);
      expectGate(s);
      expectVerification(s);
      const rows = (await getJsonl<TrainingRow>(stack.store, batchKey(runId, k, runId)))!;
      expectRows(s, rows);
      // The pool: iteration k's invalid slots drew from the state committed at k − 1; the next state adds
      // the own verified problems, or is empty after a reset boundary.
      const added = s.solve.flatMap((v, i) =>
        v.source === 'own' && v.problem
          ? [
              {
                ...v.problem,
                successRate: successRate(s.judge[i]!.answers.map((a) => a.reward)),
                iteration: k,
              },
            ]
          : [],
      );
      const after = await committedState(runId, k);
      expect(after).toEqual(nextState(before, k, added, { ...SSP_DEFAULTS.replay, resetEvery: 2 }));
      for (const v of s.solve.filter((x) => x.source === 'replay'))
        expect(before.pool.map((p) => p.question)).toContain(v.problem?.question);
      if (before.pool.length === 0) expect(s.solve.some((v) => v.source === 'replay')).toBe(false);
      before = after;
    }
    expect((await committedState(runId, 1)).pool.length).toBeGreaterThan(0);
    expect((await committedState(runId, 2)).pool).toEqual([]);
    expect(all[1]!.solve.some((v) => v.source === 'replay')).toBe(true);
    expect(all[2]!.solve.some((v) => v.source === 'none')).toBe(true);

    // Each way a question fails happened and was a failure.
    const verifications = all.flatMap((s) =>
      s.solve.flatMap((v) => (v.verification ? [v.verification] : [])),
    );
    for (const failure of ['unparseable', 'wrong_answer'])
      expect(verifications.some((v) => v.failure === failure)).toBe(true);
    expect(verifications.some((v) => v.passed)).toBe(true);
    const reasons = all.flatMap((s) => s.gate.flatMap((g) => (g.rule.passed ? [] : [g.rule.reason])));
    expect(new Set(reasons).size).toBeGreaterThanOrEqual(3);
    // The judge said "Incorrect" to solvers, and those answers scored 0 (never read as "correct").
    const judged = all.flatMap((s) => s.judge.flatMap((j) => j.answers));
    const incorrect = judged.filter((a) => a.judge && /incorrect/i.test(a.judge.completion));
    expect(incorrect.length).toBeGreaterThan(0);
    for (const a of incorrect) expect(a.reward).toBe(0);
    expect(judged.some((a) => a.judge?.verdict === 'correct' && a.reward === 1)).toBe(true);
  });

  test(
    'a worker SIGKILLed in the middle of a multi-turn solve shard resumes without redoing finished trajectories',
    async () => {
      const runId = uniqueId('ssp-crash');
      stack.llm.reset();
      // Turns slow enough that a trajectory seen in progress is still in progress when the kill lands: at 150 ms
      // its last turns could finish between the check below and the SIGKILL on a loaded machine.
      stack.llm.configure({ capacity: 4, calls: { [SSP_CALLS.solver]: { latencyMs: 500 } } });
      const config = sspConfig(runId, {
        iterations: 1,
        timeouts: { heartbeatSeconds: 3, activityMaxAttempts: 10 },
      });
      let worker = spawnWorker(stack.workerEnv);
      try {
        const handle = await stack.client.workflow.start(selfPlayRun, {
          workflowId: runId,
          taskQueue: `${stack.queuePrefix}-orchestrator`,
          args: [config],
        });
        // A shard's unit parts are `…/shard-S/unit-U.json.gz`; a trajectory's checkpoint is
        // `…/shard-S/unit-U/traj-solver-{own|replay}-J.json.gz`, kept while the unit is unfinished.
        const snapshot = async () => {
          const units: SspSolved[] = [];
          /** Units stored as parts of a shard still solving: what its retry must read back. */
          const parts: SspSolved[] = [];
          const checkpoints = new Map<
            string,
            { docIndex: number; source: string; j: number; trajectory: Trajectory }
          >();
          let unfinished = false;
          for (const shard of SHARDS) {
            const key = shardKey(runId, 1, 'solve', shard);
            const finished = await getJsonl<SspSolved>(stack.store, key);
            if (finished) {
              units.push(...finished);
              continue;
            }
            for (const part of await stack.store.list(`${key.replace(/\.jsonl\.gz$/, '')}/`)) {
              const traj = /unit-(\d+)\/traj-solver-(own|replay)-(\d+)\.json\.gz$/.exec(part);
              if (traj) {
                const trajectory = (await getJson<Trajectory>(stack.store, part))!;
                // `unit` numbers a shard's units; docIndex numbers the iteration's.
                const docIndex = shard * 5 + Number(traj[1]);
                checkpoints.set(part, { docIndex, source: traj[2]!, j: Number(traj[3]), trajectory });
              } else if (/unit-\d+\.json\.gz$/.test(part)) {
                unfinished = true;
                const stored = (await getJson<SspSolved>(stack.store, part))!;
                units.push(stored);
                parts.push(stored);
              }
            }
          }
          const done = new Set(units.map((u) => u.docIndex));
          const partial = [...checkpoints.values()].filter(
            (c) => !done.has(c.docIndex) && c.trajectory.turns.length > 0,
          );
          return { units: units.filter((u) => u.trajectories.length > 0), parts, partial, unfinished };
        };
        // Kill once a shard still solving has stored a solved unit and holds a half-done trajectory.
        await waitFor(
          'a solve shard of iteration 1 with a stored unit and a trajectory in progress',
          async () => {
            const now = await snapshot();
            return now.unfinished && now.units.length > 0 && now.partial.length > 0;
          },
          240_000,
        );
        await worker.stop('SIGKILL');
        const atKill = await snapshot();
        expect(atKill.partial.length).toBeGreaterThan(0);

        worker = spawnWorker(stack.workerEnv);
        expect((await handle.result()).lastCommitted).toBe(1);
        await worker.stop('SIGKILL');

        const counts = stack.llm.stats().fingerprintCounts;
        const s = await stages(runId, 1);
        // Units stored before the kill: every turn of every trajectory was requested exactly once.
        for (const unit of atKill.units)
          for (const print of trajectoryTurnPrints(unit).flat()) expect(counts[print]).toBe(1);
        // Trajectories half done at the kill: the turns they had finished were never requested again.
        let resumed = 0;
        for (const { docIndex, source, j, trajectory } of atKill.partial) {
          const final = s.solve.find((u) => u.docIndex === docIndex)!;
          expect(final.source).toBe(source);
          const prints = trajectoryTurnPrints(final)[j]!;
          expect(final.trajectories[j]!.completion.startsWith(trajectory.completion)).toBe(true);
          for (const print of prints.slice(0, trajectory.turns.length)) expect(counts[print]).toBe(1);
          resumed += trajectory.turns.length;
        }
        expect(resumed).toBeGreaterThan(0);
        const manifest = await getJson<Manifest>(stack.store, manifestKey(runId, 1));
        // The retried shard read its stored units back (a shard that had finished before the kill is not
        // retried, so its units are not counted as reused).
        expect(atKill.parts.length).toBeGreaterThan(0);
        expect(manifest!.metrics.reusedUnits).toBeGreaterThanOrEqual(atKill.parts.length);
      } finally {
        stack.llm.configure({ capacity: 64, calls: { [SSP_CALLS.solver]: { latencyMs: 0 } } });
        await worker.stop('SIGKILL');
      }
    },
    8 * 60_000,
  );

  test("selfplay eval --rollout search: each benchmark item answered by the solver's search rollout, scored by what the tool found", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'ssp-agentic-eval-'));
    // Held-out two-search questions of the fixture world (town ← founder ← birthplace and year), as a user's
    // own JSONL of questions and answers.
    const corpus = readFileSync('test/fixtures/ssp/corpus.jsonl', 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string; title: string; text: string });
    const items = corpus
      .filter((d) => d.id.startsWith('town-'))
      .slice(0, 6)
      .map((town) => {
        const [, profession, founder] = FOUNDED_BY.exec(town.text)!;
        const born = corpus.map((d) => BORN_IN.exec(d.text)).find((m) => m?.[1] === founder)!;
        return { question: bridgeQuestion(profession!, born[3]!, born[4]!), answer: town.title };
      });
    const bench = path.join(dir, 'towns.jsonl');
    writeFileSync(bench, items.map((i) => JSON.stringify(i)).join('\n') + '\n');
    // A tool over another corpus: the same agent, nothing to find.
    const unrelated = path.join(dir, 'unrelated');
    await buildIndex({ corpus: 'test/fixtures/corpus/small.jsonl', out: unrelated, kind: 'bm25' });

    // A model with no run: its config from a file (the stack's queues, the index as its search tool).
    const evaluate = async (tool: string) => {
      const runId = uniqueId('ssp-eval');
      const config = path.join(dir, `${runId}.json`);
      writeFileSync(config, JSON.stringify(sspConfig(runId, { retrieval: { index: tool } })));
      const args = ['eval', runId, '--config', config, '--iteration', '0', '--rollout', 'search'];
      return stack.withWorkers(() => selfplay([...args, '--bench', `towns=${bench}`], stack.cliEnv));
    };
    stack.llm.reset();
    const found = await evaluate(index);
    expect(found.stderr).toBe('');
    expect(found.code).toBe(0);
    // Every answer right, after the chain's two searches; no single-answer call was made.
    expect(found.stdout).toMatch(/towns +simple +6 +1 +100\.0% +0\.0% +2\.00 +0\n/);
    expect(stack.llm.stats().byCall[EVAL_CALLS.search]?.requests).toBe(6 * 3);
    expect(stack.llm.stats().byCall[EVAL_CALLS.answer]).toBeUndefined();
    const key = /towns: (\S+)/.exec(found.stdout)![1]!;
    const verdicts = (await getJsonl<ItemVerdicts>(stack.store, key))!;
    expect(verdicts).toHaveLength(6);
    for (const [i, v] of verdicts.entries()) {
      const [sample] = v.samples;
      expect(sample).toMatchObject({ correct: true, extracted: items[i]!.answer, turns: 3, stop: 'final' });
      expect(sample!.searches).toHaveLength(2);
      expect(sample!.completion).toContain('<information>');
    }

    const blind = await evaluate(unrelated);
    expect(blind.code).toBe(0);
    expect(blind.stdout).toMatch(/towns +simple +6 +1 +0\.0% +0\.0% +2\.00 +0\n/);
  });
});

/** The fingerprints of every solver turn request of a unit, grouped by trajectory. */
function trajectoryTurnPrints(unit: SspSolved): string[][] {
  if (!unit.problem) return [];
  const messages = solverMessages(unit.problem.question);
  return unit.trajectories.map((t, j) => {
    const seed = seedOf(SEED, 1, 'solve', unit.docIndex, j);
    return turnStarts(t).map((start, turn) => {
      const prefix = [...t.completion].slice(0, start).join('');
      const sent = turn === 0 ? messages : [...messages, { role: 'assistant' as const, content: prefix }];
      return fingerprintOf(SSP_CALLS.solver, sent, seedOf(seed, 'search-turn', turn), 1, turn > 0);
    });
  });
}

/** Where each turn of a trajectory starts: 0, then the end of each observation (every search turn has one). */
const turnStarts = (t: StoredTrajectory): number[] => [0, ...t.lossMaskSpans.map(([, end]) => end)];

/** The proposer searched the REAL index: its first search found the document of its answer. */
function expectRealSearch(s: Stages): void {
  const found = s.propose.filter((p, i) =>
    p.trajectory.information[0]?.includes(`(Title: "${s.plan[i]!.answer}")`),
  );
  expect(found.length).toBeGreaterThan(s.propose.length / 2);
  for (const p of s.propose) {
    expect(p.trajectory.searches.length).toBeGreaterThanOrEqual(1);
    expect(p.trajectory.information.length).toBe(p.trajectory.searches.length);
  }
}

/** Gate verdicts are the rule filter's; verifier prompts hold the own block and 4 whole noise blocks. */
function expectGate(s: Stages): void {
  s.gate.forEach((g, i) => {
    const p = s.propose[i]!;
    const reason = ruleFilter(
      {
        question: p.question,
        answer: s.plan[i]!.answer,
        searchTurns: s.plan[i]!.searchTurns,
        searches: p.trajectory.searches,
        informationBlocks: p.trajectory.information.length,
      },
      SSP_DEFAULTS.rules,
    );
    expect(g.rule.passed ? undefined : g.rule.reason).toBe(reason);
    if (!g.rule.passed) return;
    const prompt = g.verifierMessages![0]!.content;
    const materials = /\nMaterials:\n([\s\S]*)\n\nQuestion: /.exec(prompt)![1]!;
    const shard = Math.floor(i / 5);
    const others = s.propose
      .filter((o, j) => Math.floor(j / 5) === shard && j !== i && o.trajectory.information.length > 0)
      .map((o) => joinInformation(o.trajectory.information));
    const parts = materials.split('\n\n');
    expect(parts).toHaveLength(1 + Math.min(4, others.length));
    const own = parts.indexOf(joinInformation(p.trajectory.information));
    expect(own).toBeGreaterThanOrEqual(0);
    parts.forEach((part, j) => {
      if (j !== own) expect(others).toContain(part);
    });
  });
}

/** No verification passes without EM or a clear "Correct"; failures never solve their own question. */
function expectVerification(s: Stages): void {
  s.solve.forEach((v, i) => {
    const g = s.gate[i]!;
    if (!g.rule.passed) {
      expect(v.verification).toBeUndefined();
      expect(v.source).not.toBe('own');
      return;
    }
    const r = v.verification!;
    expect(r.passed).toBe(r.exactMatch || r.judge?.verdict === 'correct');
    if (r.judge && /incorrect/i.test(r.judge.completion)) expect(r.passed).toBe(false);
    expect(v.source === 'own').toBe(r.passed);
    if (v.problem) expect(v.trajectories).toHaveLength(G);
  });
}

/** Proposer R = 1 − success (0 if invalid), advantage R; solver groups z-scored; observations masked. */
function expectRows(s: Stages, rows: TrainingRow[]): void {
  const proposer = rows.filter((r) => r.role === 'proposer');
  expect(proposer).toHaveLength(10);
  s.plan.forEach((u, i) => {
    const row = proposer.find((r) => r.group === `proposer/a-${u.docIndex}`)!;
    const rewards = s.judge[i]!.answers.map((a) => a.reward);
    const expected = s.solve[i]!.source === 'own' ? 1 - successRate(rewards) : 0;
    expect(row.reward).toBeCloseTo(expected, 12);
    expect(row.advantage).toBe(row.reward);
  });
  const groups = new Map<string, TrainingRow[]>();
  for (const r of rows.filter((x) => x.role === 'solver'))
    groups.set(r.group, [...(groups.get(r.group) ?? []), r]);
  expect(groups.size).toBe(s.solve.filter((v) => v.problem).length);
  for (const group of groups.values()) {
    expect(group).toHaveLength(G);
    const expected = zScores(
      group.map((r) => r.reward),
      1,
    );
    group.forEach((r, j) => expect(r.advantage).toBeCloseTo(expected[j]!, 9));
  }
  for (const r of rows) {
    const points = [...r.completion];
    const masked = (r.lossMaskSpans ?? []).map(([a, b]) => points.slice(a, b).join(''));
    for (const m of masked) expect(m).toMatch(/^\n<information>\n[\s\S]*<\/information>\n\n$/);
    // Every retrieved document line lies inside a masked span.
    const docLines = (r.completion.match(/Doc \d+ \(Title: [^\n]*/g) ?? []).length;
    const maskedLines = masked.reduce((n, m) => n + (m.match(/Doc \d+ \(Title: [^\n]*/g) ?? []).length, 0);
    expect(maskedLines).toBe(docLines);
  }
}
