import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { getJson, getJsonl } from '../../activities/clients/storage/codec';
import { batchKey, latestKey, manifestKey } from '../../activities/clients/storage/keys';
import type { TrainingRow } from '../../activities/clients/trainer-contract';
import type { Manifest } from '../../contracts/selfplay';
import { selfPlayRun } from '../../workflows';
import { logprobOf, tokenIdsOf } from '../support/scripted-llm/token-ids';
import { startStack, uniqueId, type TestStack } from '../support/stack';

/** A SPICE run end to end: real Temporal, real MinIO, real HTTP to the scripted LLM and recording trainer. */
describe('SPICE run on the real stack', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  const run = (runId: string, overrides: Record<string, unknown> = {}) =>
    stack.client.workflow.execute(selfPlayRun, {
      workflowId: runId,
      taskQueue: `${stack.queuePrefix}-orchestrator`,
      // One policy lineage per run: the shared recording trainer versions each policy separately.
      args: [stack.runConfig({ training: { policy: runId }, ...overrides })],
    });

  test('three iterations commit, train once each, and continue-as-new on schedule', async () => {
    const runId = uniqueId('spice');
    const outcome = await stack.withWorkers(() => run(runId, { continueAsNewEvery: 2 }));

    expect(outcome.lastCommitted).toBe(3);
    expect(outcome.versions).toEqual({ [runId]: 3 });
    const latest = await getJson<{ iteration: number }>(stack.store, latestKey(runId));
    expect(latest?.iteration).toBe(3);

    const steps = stack.trainer.stats().steps.filter((s) => s.runId === runId);
    expect(steps.map((s) => s.iteration)).toEqual([1, 2, 3]);
    for (const s of steps) expect(stack.trainer.stats().appliedByKey[s.key]).toBe(1);

    // The first execution continued as new after 2 iterations; the second finished the run.
    const statuses: string[] = [];
    for await (const info of stack.client.workflow.list({ query: `WorkflowId = '${runId}'` }))
      statuses.push(info.status.name);
    expect(statuses.sort()).toEqual(['COMPLETED', 'CONTINUED_AS_NEW']);

    for (const iteration of [1, 2, 3]) {
      const manifest = await getJson<Manifest>(stack.store, manifestKey(runId, iteration));
      expect(manifest).toMatchObject({
        runId,
        iteration,
        recipe: 'spice',
        policies: { [runId]: { version: iteration } },
      });
      const m = manifest!.metrics.recipe;
      expect(m.documents).toBe(8);
      expect(m.passRateHistogram).toHaveLength(5);
      expect(m.validTaskRate).toBeGreaterThan(0);
      expect(m.validTaskRate).toBeLessThanOrEqual(1);
      expect(Object.keys(manifest!.metrics.stages).sort()).toEqual(
        ['filter', 'gate', 'judge', 'plan', 'propose', 'solve', 'sync', 'update'].sort(),
      );

      const rows = (await getJsonl<TrainingRow>(stack.store, batchKey(runId, iteration, runId)))!;
      const challenger = rows.filter((r) => r.role === 'challenger');
      const reasoner = rows.filter((r) => r.role === 'reasoner');
      expect(challenger).toHaveLength(8 * 4); // G trajectories per document
      expect(reasoner.length).toBeLessThanOrEqual(8 * 4); // one valid task per document, G answers each
      expect(reasoner.length % 4).toBe(0);
      // Dr.GRPO: advantages are centred in every group, with no std division.
      const byGroup = new Map<string, TrainingRow[]>();
      for (const r of rows) byGroup.set(r.group, [...(byGroup.get(r.group) ?? []), r]);
      for (const group of byGroup.values()) {
        const mean = group.reduce((s, r) => s + r.reward, 0) / group.length;
        for (const r of group) expect(r.advantage).toBeCloseTo(r.reward - mean, 12);
      }
      // The Reasoner never sees the document or the MCQ answer line.
      for (const r of reasoner) {
        const prompt = r.messages.map((m) => m.content).join('\n');
        expect(prompt).not.toMatch(/\[BEGINNING OF THE DOCUMENT\]/);
        expect(prompt).not.toMatch(/^Correct:/m);
      }
      // The scripted engine returns no token ids here: every row falls back to its text, and the step says so.
      expect(rows.some((r) => r.completionTokens)).toBe(false);
      expect(manifest!.metrics.train[runId]).toMatchObject({
        rowsRetokenized: rows.length,
        tokenExactFraction: 0,
      });
    }
  });

  test.each(['vllm', 'sglang'] as const)(
    'an engine that returns token ids (%s shape): every row carries them, and the step is token-exact',
    async (tokenIds) => {
      const runId = uniqueId(`spice-${tokenIds}`);
      stack.llm.configure({ tokenIds });
      try {
        await stack.withWorkers(() => run(runId, { iterations: 1 }));
      } finally {
        stack.llm.configure({ tokenIds: 'none' });
      }
      const rows = (await getJsonl<TrainingRow>(stack.store, batchKey(runId, 1, runId)))!;
      expect(rows.length).toBeGreaterThan(0);
      for (const r of rows) {
        const ids = tokenIdsOf(r.completion);
        expect(r.completionTokens).toEqual([{ ids }]);
        expect(r.behaviourLogprobs).toEqual(ids.map((id, i) => logprobOf(id, i)));
      }
      const manifest = await getJson<Manifest>(stack.store, manifestKey(runId, 1));
      expect(manifest!.metrics.train[runId]).toMatchObject({ rowsRetokenized: 0, tokenExactFraction: 1 });
    },
  );

  test('a document whose prompt exceeds the context is skipped, counted, and the iteration commits', async () => {
    // Seven short documents and one of 18,451 characters (about 4,600 tokens as the scripted server counts).
    const docs = readFileSync('test/fixtures/corpus/small.jsonl', 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string; text: string });
    const long = docs.filter((d) => d.text.length > 15_000).slice(0, 1);
    const short = docs.filter((d) => d.text.length < 2_000).slice(0, 7);
    const corpus = path.join(mkdtempSync(path.join(os.tmpdir(), 'spice-context-')), 'corpus.jsonl');
    writeFileSync(corpus, [...long, ...short].map((d) => JSON.stringify(d)).join('\n') + '\n');

    const runId = uniqueId('spice-context');
    stack.llm.configure({ contextTokens: 3_000 });
    try {
      const outcome = await stack.withWorkers(() => run(runId, { iterations: 1, corpus: { uri: corpus } }));
      expect(outcome.lastCommitted).toBe(1);
      expect(outcome.recent.at(-1)?.summary.skippedContextLength).toBe(1);
    } finally {
      stack.llm.configure({ contextTokens: Number.MAX_SAFE_INTEGER });
    }
    const manifest = await getJson<Manifest>(stack.store, manifestKey(runId, 1));
    expect(manifest!.metrics.recipe.documents).toBe(7);
    expect(manifest!.metrics.recipe.extra.skippedContextLength).toBe(1);
    const rows = (await getJsonl<TrainingRow>(stack.store, batchKey(runId, 1, runId)))!;
    expect(rows.filter((r) => r.role === 'challenger')).toHaveLength(7 * 4);
    for (const r of rows) expect(r.messages.map((m) => m.content).join('\n')).not.toContain(long[0]!.text);
  });

  test('two runs with the same seed commit identical training batches', async () => {
    const [a, b] = [uniqueId('same-seed-a'), uniqueId('same-seed-b')];
    await stack.withWorkers(() =>
      Promise.all([run(a, { iterations: 2, seed: 11 }), run(b, { iterations: 2, seed: 11 })]),
    );
    for (const iteration of [1, 2]) {
      const [bytesA, bytesB] = await Promise.all([
        stack.store.get(batchKey(a, iteration, a)),
        stack.store.get(batchKey(b, iteration, b)),
      ]);
      expect(bytesA?.length).toBeGreaterThan(0);
      expect(bytesA?.equals(bytesB as Buffer)).toBe(true);
    }
    // A different seed samples other documents and other answers.
    const c = uniqueId('other-seed');
    await stack.withWorkers(() => run(c, { iterations: 1, seed: 12 }));
    const [first, other] = await Promise.all([
      stack.store.get(batchKey(a, 1, a)),
      stack.store.get(batchKey(c, 1, c)),
    ]);
    expect(first?.equals(other as Buffer)).toBe(false);
  });

  test('an invalid config fails the run at once, naming every bad field', async () => {
    const runId = uniqueId('bad');
    const failure = await stack
      .withWorkers(() =>
        stack.client.workflow.execute(selfPlayRun, {
          workflowId: runId,
          taskQueue: `${stack.queuePrefix}-orchestrator`,
          args: [
            {
              recipe: 'spice',
              groupSize: 1,
              sampling: { temprature: 0.7 },
              pools: { orchestrator: `${stack.queuePrefix}-orchestrator`, rollout: 'x', trainer: 'y' },
            },
          ],
        }),
      )
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const message = String((failure as WorkflowFailedError).cause?.message);
    expect(message).toContain('groupSize');
    expect(message).toContain('temprature');
    expect((failure as WorkflowFailedError).cause).toMatchObject({
      type: 'InvalidConfig',
      nonRetryable: true,
    });
  });

  test('a new run resumes from another run’s last commit and continues its iteration count', async () => {
    const source = uniqueId('source');
    await stack.withWorkers(() => run(source, { iterations: 1 }));
    const resumed = uniqueId('resumed');
    const outcome = await stack.withWorkers(() =>
      run(resumed, { iterations: 2, resumeFrom: source, training: { policy: source } }),
    );
    expect(outcome.lastCommitted).toBe(2);
    expect(await getJson(stack.store, manifestKey(resumed, 1))).toBeUndefined();
    expect(await getJson<Manifest>(stack.store, manifestKey(resumed, 2))).toMatchObject({
      iteration: 2,
      policies: { [source]: { version: 2 } },
    });
  });
});
