import { getJson, getJsonl } from '../../activities/clients/storage/codec';
import { batchKey, manifestKey, shardKey } from '../../activities/clients/storage/keys';
import type { TrainingRow } from '../../activities/clients/trainer-contract';
import { SPELL_CALLS } from '../../activities/clients/llm-protocol';
import { seedOf } from '../../activities/lib/rng';
import { historyKey, pushHistory } from '../../activities/recipes/spell/memory';
import { exampleText } from '../../activities/recipes/spell/prompts';
import {
  hasSpread,
  majorityVote,
  responderReward,
  scoreResponses,
} from '../../activities/recipes/spell/rewards';
import { zScores } from '../../activities/scoring/advantages';
import type {
  HistoryEntry,
  SpellGated,
  SpellJudged,
  SpellState,
  SpellUnit,
} from '../../activities/recipes/spell/records';
import type { Manifest } from '../../contracts/selfplay';
import { selfPlayRun } from '../../workflows';
import { fingerprintOf } from '../support/scripted-llm/chat-request';
import { startStack, uniqueId, type TestStack } from '../support/stack';
import { spawnWorker } from '../support/worker-process';
import { waitFor } from '../support/wait';

const G = 4;
const SHARDS = [0, 1];

/**
 * A SPELL run end to end on the real stack (Temporal, MinIO, HTTP to the scripted model and the recording
 * trainer). The history memory is the recipe state: each iteration must plan from exactly the memory the
 * previous one committed, through transient faults, a worker killed in the middle of judging, and a resume.
 */
describe('SPELL run on the real stack', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack({ llm: { passRate: { min: 0.15, max: 0.85 }, ungroundedRate: 0.2 } });
  });
  afterAll(() => stack.close());

  const spellConfig = (runId: string, overrides: Record<string, unknown> = {}) =>
    stack.runConfig({
      recipe: 'spell',
      seed: 5,
      batchSize: 6,
      shardSize: 3,
      groupSize: G,
      corpus: { uri: 'test/fixtures/corpus/clusters.jsonl' },
      // Small batches: train a verifier group per responder group, so the verifier role is exercised. One
      // round per step: the accumulator has its own test.
      spell: { verifierRatio: 1, maxRounds: 1 },
      training: { policy: runId },
      ...overrides,
    });

  const read = async <T>(runId: string, iteration: number, stage: string, shards = SHARDS): Promise<T[]> =>
    (
      await Promise.all(shards.map((s) => getJsonl<T>(stack.store, shardKey(runId, iteration, stage, s))))
    ).flatMap((r) => r ?? []);

  const committedState = async (runId: string, iteration: number): Promise<SpellState> => {
    const manifest = await getJson<Manifest>(stack.store, manifestKey(runId, iteration));
    expect(manifest?.recipeStateKey).toBeDefined();
    return (await getJson<SpellState>(stack.store, manifest!.recipeStateKey!))!;
  };

  test('three iterations: the memory starts empty, each iteration plans from the last commit, faults are survived', async () => {
    const runId = uniqueId('spell');
    // 5xx on a third of the verifier requests (retried by the client) and garbage in a tenth of them.
    stack.llm.configure({
      calls: { [SPELL_CALLS.verifier]: { faults: { http500: 0.3, garbageContent: 0.1 } } },
    });
    try {
      const outcome = await stack.withWorkers(() =>
        stack.client.workflow.execute(selfPlayRun, {
          workflowId: runId,
          taskQueue: `${stack.queuePrefix}-orchestrator`,
          // A seed whose three iterations hold all-equal groups (asserted below), as well as learnable ones.
          args: [spellConfig(runId, { seed: 6 })],
        }),
      );
      expect(outcome.lastCommitted).toBe(3);
    } finally {
      stack.llm.configure({
        calls: { [SPELL_CALLS.verifier]: { faults: { http500: 0, garbageContent: 0 } } },
      });
    }
    expect(stack.llm.stats().faults.http500).toBeGreaterThan(0);
    expect(stack.llm.stats().faults.garbageContent).toBeGreaterThan(0);

    await expectMemoryChain(runId, 3);

    const judged = (await Promise.all([1, 2, 3].map((k) => read<SpellJudged>(runId, k, 'judge')))).flat();
    const votes = judged.flatMap((j) => j.responses.flatMap((r) => r.verifier?.votes ?? []));
    expect(votes).toContain(-1); // malformed judgments
    const manifests = await Promise.all(
      [1, 2, 3].map((k) => getJson<Manifest>(stack.store, manifestKey(runId, k))),
    );
    const histograms = manifests.map((m) => m!.metrics.recipe.passRateHistogram);
    // All-equal groups happen (k = 0 or G of G) and are never trained as responder groups.
    expect(histograms.some((h) => (h[0] ?? 0) + (h[G] ?? 0) > 0)).toBe(true);

    for (const k of [1, 2, 3]) {
      expect(manifests[k - 1]).toMatchObject({ recipe: 'spell', policies: { [runId]: { version: k } } });
      const rows = (await getJsonl<TrainingRow>(stack.store, batchKey(runId, k, runId)))!;
      const groups = new Map<string, TrainingRow[]>();
      for (const r of rows) groups.set(r.group, [...(groups.get(r.group) ?? []), r]);
      for (const [name, group] of groups) {
        const expected = zScores(
          group.map((r) => r.reward),
          1,
        );
        group.forEach((r, j) => expect(r.advantage).toBeCloseTo(expected[j] as number, 9));
        if (name.startsWith('responder/')) {
          expect(group).toHaveLength(G);
          expect(new Set(group.map((r) => r.reward)).size).toBe(2);
        }
        if (name.startsWith('verifier/')) expect(group).toHaveLength(G);
      }
      // Questioner: the positives behind the responder groups, plus at most as many negatives.
      const roles = manifests[k - 1]!.metrics.recipe.rowsByRole;
      const positives = (roles.responder ?? 0) / G;
      expect(roles.questioner ?? 0).toBeGreaterThanOrEqual(positives);
      expect(roles.questioner ?? 0).toBeLessThanOrEqual(2 * positives);
    }
  });

  test('a worker SIGKILLed while judging: the run finishes with the same memory chain, and a resume from k starts from the memory of k', async () => {
    const runId = uniqueId('spell-crash');
    // One verifier request of G at a time, slow enough that judging an iteration takes seconds. The first
    // test sent some of the same requests (same seed): forget them, so request counts are this run's.
    stack.llm.reset();
    stack.llm.configure({ capacity: G, calls: { [SPELL_CALLS.verifier]: { latencyMs: 300 } } });
    const config = spellConfig(runId, { timeouts: { heartbeatSeconds: 3, activityMaxAttempts: 10 } });
    let worker = spawnWorker(stack.workerEnv);
    try {
      const handle = await stack.client.workflow.start(selfPlayRun, {
        workflowId: runId,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [config],
      });
      // Kill once iteration 2 has gated both shards and a shard still judging has stored a judged question.
      const partiallyJudged = async (): Promise<SpellJudged[]> => {
        const units: SpellJudged[] = [];
        for (const shard of SHARDS) {
          const key = shardKey(runId, 2, 'judge', shard);
          if (await stack.store.exists(key)) continue;
          const parts = await stack.store.list(`${key.replace(/\.jsonl\.gz$/, '')}/`);
          for (const part of parts)
            units.push((await getJson<SpellJudged>(stack.store, part)) as SpellJudged);
        }
        return units;
      };
      const judgedSoFar = async (): Promise<SpellJudged[]> => {
        const finished = await Promise.all(
          SHARDS.map((s) => getJsonl<SpellJudged>(stack.store, shardKey(runId, 2, 'judge', s))),
        );
        return [...finished.flatMap((rows) => rows ?? []), ...(await partiallyJudged())];
      };
      await waitFor(
        'a judged question of a shard still judging in iteration 2',
        async () => {
          const gated = await Promise.all(
            SHARDS.map((s) => stack.store.exists(shardKey(runId, 2, 'gate', s))),
          );
          return gated.every(Boolean) && (await partiallyJudged()).some((j) => j.responses.length > 0);
        },
        120_000,
      );
      await worker.stop('SIGKILL');
      // Everything judged before the kill, in unit parts or in a shard file written in the meantime: all of
      // it is read back after the restart, never re-requested.
      const saved = await judgedSoFar();
      const partial = await partiallyJudged();

      worker = spawnWorker(stack.workerEnv);
      expect((await handle.result()).lastCommitted).toBe(3);
      await worker.stop('SIGKILL');

      // Units judged before the crash were read back, their verifier requests never sent again.
      const prints = saved.flatMap((j) =>
        j.responses.flatMap((r, i) =>
          r.verifier
            ? [
                fingerprintOf(
                  SPELL_CALLS.verifier,
                  r.verifier.messages,
                  seedOf(5, 2, 'verify', j.docIndex, i),
                  G,
                ),
              ]
            : [],
        ),
      );
      expect(prints.length).toBeGreaterThan(0);
      for (const fp of prints) expect(stack.llm.stats().fingerprintCounts[fp]).toBe(1);
      const manifest2 = await getJson<Manifest>(stack.store, manifestKey(runId, 2));
      // The retried shard read its stored unit parts back instead of judging them again.
      expect(manifest2!.metrics.reusedUnits).toBeGreaterThanOrEqual(partial.length);
      await expectMemoryChain(runId, 3);
    } finally {
      stack.llm.configure({ capacity: 64, calls: { [SPELL_CALLS.verifier]: { latencyMs: 0 } } });
      await worker.stop('SIGKILL');
    }

    // A new run forked from iteration 1 plans iteration 2 from the memory committed at 1: the same plan.
    const resumed = uniqueId('spell-resumed');
    const outcome = await stack.withWorkers(() =>
      stack.client.workflow.execute(selfPlayRun, {
        workflowId: resumed,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [
          spellConfig(resumed, {
            iterations: 2,
            resumeFrom: { runId, iteration: 1 },
            training: { policy: runId },
          }),
        ],
      }),
    );
    expect(outcome.lastCommitted).toBe(2);
    const plan = await read<SpellUnit>(resumed, 2, 'plan');
    expectPlanUses(plan, await committedState(runId, 1));
    expect(plan).toEqual(await read<SpellUnit>(runId, 2, 'plan'));
    expect(await committedState(resumed, 2)).toEqual(await committedState(runId, 2));
  });

  test('the accumulator plans rounds until N responder groups are judged, then trains the first N', async () => {
    const ITEMS = 6; // batchSize: items per round, in two shards
    const range = (n: number) => Array.from({ length: n }, (_, i) => i);
    const solvable = (judged: SpellJudged[]) =>
      judged.filter((j) => hasSpread(scoreResponses(j.responses).map((r) => r.reward)));
    const runOne = async (runId: string, spell: Record<string, unknown>) => {
      const outcome = await stack.withWorkers(() =>
        stack.client.workflow.execute(selfPlayRun, {
          workflowId: runId,
          taskQueue: `${stack.queuePrefix}-orchestrator`,
          args: [spellConfig(runId, { iterations: 1, spell: { verifierRatio: 1, ...spell } })],
        }),
      );
      expect(outcome.lastCommitted).toBe(1);
      const manifest = (await getJson<Manifest>(stack.store, manifestKey(runId, 1)))!;
      const rounds = manifest.metrics.rounds ?? 0;
      const shards = range(2 * rounds);
      const plan = await read<SpellUnit>(runId, 1, 'plan', shards);
      const judged = await read<SpellJudged>(runId, 1, 'judge', shards);
      const rows = (await getJsonl<TrainingRow>(stack.store, batchKey(runId, 1, runId)))!;
      const responderGroups = [...new Set(rows.filter((r) => r.role === 'responder').map((r) => r.group))];
      return { manifest, rounds, plan, judged, responderGroups };
    };

    // N = 6 of 6 items per round: a round of this scripted model leaves some groups all-equal or ungrounded.
    const gathered = await runOne(uniqueId('spell-rounds'), { responderGroups: 6, maxRounds: 6 });
    const { rounds, plan, judged } = gathered;
    expect(rounds).toBeGreaterThanOrEqual(2);
    expect(rounds).toBeLessThanOrEqual(6);
    // Every round's units are the iteration's own: shards and docIndex run on across rounds.
    expect(plan.map((u) => u.docIndex)).toEqual(range(ITEMS * rounds));
    expect(judged.map((j) => j.docIndex)).toEqual(range(ITEMS * rounds));
    const itemsOf = (round: number) => plan.slice(round * ITEMS, (round + 1) * ITEMS);
    expect(itemsOf(1).map((u) => [u.cluster, u.task, u.questionerDocs])).not.toEqual(
      itemsOf(0).map((u) => [u.cluster, u.task, u.questionerDocs]),
    );
    // Another round only while the rounds so far fell short; the last one reached N, or was the last allowed.
    const perRound = range(rounds).map(
      (r) => solvable(judged.filter((j) => Math.floor(j.docIndex / ITEMS) === r)).length,
    );
    expect(perRound.slice(0, -1).reduce((a, b) => a + b, 0)).toBeLessThan(6);
    const found = solvable(judged);
    if (rounds < 6) expect(found.length).toBeGreaterThanOrEqual(6);
    // Truncated to N in plan order (§1.10).
    expect(gathered.responderGroups).toEqual(found.slice(0, 6).map((j) => `responder/q-${j.docIndex}`));
    expect(gathered.manifest.metrics.recipe.extra.responderGroups).toBe(Math.min(6, found.length));

    // A target out of reach: the step stops after maxRounds and trains every group it found.
    const capped = await runOne(uniqueId('spell-capped'), { responderGroups: 1000, maxRounds: 2 });
    expect(capped.rounds).toBe(2);
    expect(capped.plan).toHaveLength(2 * ITEMS);
    expect(capped.responderGroups).toHaveLength(solvable(capped.judged).length);
    expect(capped.responderGroups.length).toBeGreaterThan(0);
  });

  /**
   * For k = 1..n: iteration k planned from the memory committed at k − 1 (empty for k = 1), and the memory
   * committed at k is that memory plus iteration k's questions with 0 < r̄ < 1. Some questioner context grew.
   */
  async function expectMemoryChain(runId: string, n: number): Promise<void> {
    let before: SpellState = { v: 1, history: {} };
    let grew = false;
    for (let k = 1; k <= n; k++) {
      const [plan, gate, judge] = await Promise.all([
        read<SpellUnit>(runId, k, 'plan'),
        read<SpellGated>(runId, k, 'gate'),
        read<SpellJudged>(runId, k, 'judge'),
      ]);
      expect(plan).toHaveLength(6);
      if (k === 1) for (const u of plan) expect(u.examples).toEqual([]);
      expectPlanUses(plan, before);
      grew ||= plan.some((u) => u.questionerDocs.length > 5);

      const pushes = plan.flatMap((u, i) => {
        const q = gate[i]?.question;
        if (gate[i]?.status !== 'valid' || !q) return [];
        const rewards = judge[i]!.responses.map((r) =>
          responderReward(r.rule, r.verifier ? majorityVote(r.verifier.votes) : undefined),
        );
        const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
        if (mean <= 0 || mean >= 1) return [];
        const entry: HistoryEntry = { docs: u.questionerDocs, question: exampleText(q), answer: q.answer };
        return [{ key: historyKey(u.task, u.cluster), entry }];
      });
      const after = await committedState(runId, k);
      expect(after).toEqual(pushHistory(before, pushes, 3));
      before = after;
    }
    expect(Object.keys(before.history).length).toBeGreaterThan(0);
    expect(grew).toBe(true);
  }
});

/** Every planned item shows exactly its (task, cluster) history and sees its documents plus new ones. */
function expectPlanUses(plan: readonly SpellUnit[], state: SpellState): void {
  for (const u of plan) {
    const history = state.history[historyKey(u.task, u.cluster)] ?? [];
    expect(u.examples).toEqual(history.map(({ question, answer }) => ({ question, answer })));
    const union = new Set(history.flatMap((h) => h.docs));
    for (const id of union) expect(u.questionerDocs).toContain(id);
    expect(u.questionerDocs).toHaveLength(Math.min(u.documents.length, union.size + 5));
  }
}
