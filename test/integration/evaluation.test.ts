import { readFileSync } from 'node:fs';
import { getJson, getJsonl } from '../../activities/clients/storage/codec';
import { manifestKey } from '../../activities/clients/storage/keys';
import { writeObjectAtUri } from '../../activities/clients/storage';
import { EVAL_CALLS } from '../../activities/clients/llm-protocol';
import type { ItemVerdicts } from '../../activities/evaluation/evaluate';
import { metrics } from '../../activities/lib/metrics';
import { loadManifests, PLOT_IDS, renderReport } from '../../cli/report';
import type { Manifest } from '../../contracts/selfplay';
import { selfPlayRun } from '../../workflows';
import { iterationChildId, iterationProgressQuery } from '../../workflows/messages';
import { parseBenchmark } from '../../activities/evaluation/benchmarks';
import { seedOf } from '../../activities/lib/rng';
import { reasonerMessages } from '../../activities/recipes/spice/prompts';
import { fingerprintOf } from '../support/scripted-llm/chat-request';
import { selfplay } from '../support/cli';
import { startStack, uniqueId, type TestStack } from '../support/stack';
import { waitFor } from '../support/wait';
import { spawnWorker } from '../support/worker-process';

/** Problems the scripted server writes and recognises, as GSM8K lines (`#### gold`) and as the simple format. */
const ARITH = 'test/fixtures/eval/scripted-gsm8k.jsonl';
const ARITH_ITEMS = 12;
const HELDOUT_ITEMS = 6;
/** The scripted server serves the policy under a name per version, as vLLM serves one LoRA adapter per version. */
const MODELS = ['scripted-policy', ...Array.from({ length: 8 }, (_, v) => `scripted-policy-v${v}`)];

/**
 * In-run evaluation on the real stack: a SPICE run that evaluates its start and every 2nd iteration on two
 * benchmark files (a GSM8K-format file by path, a simple one in MinIO by s3://), with the scripted LLM
 * answering better at every version (20% right at v0, +30 points a version), then `selfplay eval` on a
 * committed version, which finds every item stored.
 */
describe('held-out evaluation in a run and by selfplay eval', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack({ llm: { models: MODELS, evalSkill: { base: 0.2, perVersion: 0.3 } } });
  });
  afterAll(() => stack.close());

  test('the start and every 2nd iteration (and the last) are evaluated into the manifests, Prometheus and the report', async () => {
    const runId = uniqueId('eval-run');
    const heldout = `${stack.storageUri}/benchmarks/heldout.jsonl`;
    await writeObjectAtUri(heldout, readFileSync('test/fixtures/eval/heldout.jsonl'));
    const config = stack.runConfig({
      iterations: 3,
      training: { policy: runId },
      inference: {
        default: { model: 'scripted-policy-v{version}' },
        requestTimeoutSeconds: 10,
        maxRetries: 3,
      },
      evaluation: {
        every: 2,
        atStart: true,
        n: 2,
        temperature: 1,
        benchmarks: [
          { name: 'arith', uri: ARITH },
          { name: 'heldout', uri: heldout },
        ],
      },
    });
    const outcome = await stack.withWorkers(() =>
      stack.client.workflow.execute(selfPlayRun, {
        workflowId: runId,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [config],
      }),
    );
    expect(outcome.lastCommitted).toBe(3);

    const manifests = await Promise.all(
      [1, 2, 3].map(async (i) => (await getJson<Manifest>(stack.store, manifestKey(runId, i)))!),
    );
    const [first, second, third] = manifests.map((m) => m.metrics);
    // Iteration 1 scores the start (version 0) and not itself; 2 is the 2nd; 3 is the last.
    expect(first?.evalAtStart).toMatchObject({ policy: runId, version: 0 });
    expect(first?.eval).toBeUndefined();
    expect(second?.evalAtStart).toBeUndefined();
    expect(second?.eval).toMatchObject({ policy: runId, version: 2 });
    expect(third?.eval).toMatchObject({ policy: runId, version: 3 });
    expect(first?.stages.evalStart).toBeDefined();
    expect(first?.stages.eval).toBeUndefined();
    expect(second?.stages.eval).toBeDefined();

    const results = [first!.evalAtStart!, second!.eval!, third!.eval!];
    for (const r of results) {
      expect(r.benchmarks.arith).toMatchObject({ format: 'gsm8k', items: ARITH_ITEMS, n: 2, reusedItems: 0 });
      expect(r.benchmarks.heldout).toMatchObject({ format: 'simple', items: HELDOUT_ITEMS, n: 2 });
      for (const b of Object.values(r.benchmarks)) {
        expect(Object.keys(b.passAtK)).toEqual(['1', '2']);
        expect(b.passAtK['1']).toBeCloseTo(b.accuracy, 12);
        expect(b.passAtK['2']).toBeGreaterThanOrEqual(b.accuracy);
        expect(b.noAnswer).toBe(0);
      }
    }
    // The scripted skill rises with the version: never worse, and every answer right at v3 (skill 1.1).
    const accuracy = (name: string) => results.map((r) => r.benchmarks[name]!.accuracy);
    for (const name of ['arith', 'heldout']) {
      const [v0, v2, v3] = accuracy(name) as [number, number, number];
      expect(v0).toBeLessThan(1);
      expect(v2).toBeGreaterThanOrEqual(v0);
      expect(v3).toBe(1);
    }
    expect(accuracy('arith')[0]).toBeLessThan(accuracy('arith')[1]!);

    // Per-item verdicts: every item, two judged samples each, answers in \boxed{}.
    const verdicts = (await getJsonl<ItemVerdicts>(stack.store, third!.eval!.benchmarks.arith!.resultsKey))!;
    expect(verdicts.map((v) => v.unit)).toEqual([...Array(ARITH_ITEMS).keys()]);
    for (const v of verdicts) {
      expect(v.samples).toHaveLength(2);
      for (const s of v.samples) expect(s).toMatchObject({ extracted: v.gold, correct: true });
    }
    // One request per item and evaluated version, in the SPICE Reasoner's prompt, seeded per item (the
    // server's fingerprint leaves out the model name, so each item's is seen once per version).
    const evalStats = stack.llm.stats();
    expect(evalStats.byCall[EVAL_CALLS.answer]).toEqual({
      requests: 3 * (ARITH_ITEMS + HELDOUT_ITEMS),
      completions: 3 * 2 * (ARITH_ITEMS + HELDOUT_ITEMS),
    });
    const prints = [
      ['arith', ARITH],
      ['heldout', 'test/fixtures/eval/heldout.jsonl'],
    ].flatMap(([name, file]) =>
      parseBenchmark(readFileSync(file!, 'utf8')).items.map((item) =>
        fingerprintOf(
          EVAL_CALLS.answer,
          reasonerMessages(item.question, 'qwen'),
          seedOf(0, 'eval', name!, item.index),
          2,
        ),
      ),
    );
    expect(prints).toHaveLength(ARITH_ITEMS + HELDOUT_ITEMS);
    for (const fp of prints) expect(evalStats.fingerprintCounts[fp]).toBe(3);

    // The worker's Prometheus registry (in this process) holds the last evaluation.
    const exposed = metrics.expose();
    expect(exposed).toContain(
      `selfplay_eval_accuracy{benchmark="arith",policy="${runId}",recipe="spice"} 1\n`,
    );
    expect(exposed).toContain(
      `selfplay_eval_version{benchmark="heldout",policy="${runId}",recipe="spice"} 3\n`,
    );
    expect(exposed).toMatch(
      new RegExp(
        `selfplay_eval_pass_at_k\\{benchmark="arith",k="2",policy="${runId}",recipe="spice"\\} 1\\n`,
      ),
    );

    // The report draws the start at iteration 0 and the two evaluations.
    const html = renderReport(runId, await loadManifests(stack.store, runId), 'now');
    const plot = html.slice(html.indexOf(`<svg id="${PLOT_IDS.eval}"`));
    const svg = plot.slice(0, plot.indexOf('</svg>'));
    expect(svg.match(/<title>arith @ (\d+):/g)).toEqual([
      '<title>arith @ 0:',
      '<title>arith @ 2:',
      '<title>arith @ 3:',
    ]);
    expect(html).toContain('<th>accuracy: arith</th><th>pass@2: arith</th><th>maj@2: arith</th>');

    // `selfplay eval` on iteration 2 and on the base weights, with the run's settings: every item is stored.
    stack.llm.reset();
    const cli = await stack.withWorkers(() =>
      selfplay(
        ['eval', runId, '--iteration', '2', '--bench', `arith=${ARITH}`, '--bench', `heldout=${heldout}`],
        stack.cliEnv,
      ),
    );
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    const [v2arith, v2heldout] = [second!.eval!.benchmarks.arith!, second!.eval!.benchmarks.heldout!];
    expect(cli.stdout).toContain(`run ${runId}, iteration 2: policy ${runId} v2`);
    expect(cli.stdout).toMatch(
      new RegExp(
        `arith +gsm8k +${ARITH_ITEMS} +2 +${(100 * v2arith.accuracy).toFixed(1)}%.* ${ARITH_ITEMS}\\n`,
      ),
    );
    expect(cli.stdout).toMatch(
      new RegExp(
        `heldout +simple +${HELDOUT_ITEMS} +2 +${(100 * v2heldout.accuracy).toFixed(1)}%.* ${HELDOUT_ITEMS}\\n`,
      ),
    );
    expect(cli.stdout).toContain(v2arith.resultsKey);
    expect(stack.llm.stats().byCall[EVAL_CALLS.answer]).toBeUndefined();

    // A first 4 items at version 0 with one greedy sample: new settings, asked anew, 4 requests.
    const base = await stack.withWorkers(() =>
      selfplay(
        [
          'eval',
          runId,
          '--iteration',
          '0',
          '--bench',
          ARITH,
          '--n',
          '1',
          '--temperature',
          '0',
          '--limit',
          '4',
        ],
        stack.cliEnv,
      ),
    );
    expect(base.code).toBe(0);
    expect(base.stdout).toContain(`run ${runId}, iteration 0: policy ${runId} v0`);
    expect(base.stdout).toMatch(/scripted-gsm8k +gsm8k +4 +1 /);
    expect(stack.llm.stats().byCall[EVAL_CALLS.answer]?.requests).toBe(4);
  });

  test('a worker SIGKILLed mid-evaluation: the retry asks only for the items it had not stored', async () => {
    const runId = uniqueId('eval-crash');
    // One evaluation request at a time (two samples hold both slots), slow enough to be killed among them.
    stack.llm.configure({ capacity: 2, calls: { [EVAL_CALLS.answer]: { latencyMs: 200 } } });
    stack.llm.reset();
    const config = stack.runConfig({
      iterations: 1,
      training: { policy: runId },
      inference: {
        default: { model: 'scripted-policy-v{version}' },
        requestTimeoutSeconds: 10,
        maxRetries: 3,
      },
      timeouts: { heartbeatSeconds: 3, activityMaxAttempts: 10 },
      evaluation: { every: 1, n: 2, temperature: 1, benchmarks: [{ name: 'arith', uri: ARITH }] },
    });
    const itemKeys = async (): Promise<string[]> =>
      (await stack.store.list(`runs/${runId}/eval/`)).filter((k) => k.includes('/items/'));
    let worker = spawnWorker(stack.workerEnv);
    try {
      const handle = await stack.client.workflow.start(selfPlayRun, {
        workflowId: runId,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [config],
      });
      await waitFor('some evaluated items in storage', async () => (await itemKeys()).length >= 3);
      await worker.stop('SIGKILL');
      const saved = await itemKeys();
      expect(saved.length).toBeLessThan(ARITH_ITEMS); // killed in the middle of the evaluation
      const savedUnits = saved.map((k) => Number(/item-(\d+)\.json\.gz$/.exec(k)?.[1]));

      worker = spawnWorker(stack.workerEnv);
      expect((await handle.result()).lastCommitted).toBe(1);

      const arith = (await getJson<Manifest>(stack.store, manifestKey(runId, 1)))!.metrics.eval!.benchmarks
        .arith!;
      expect(arith.items).toBe(ARITH_ITEMS);
      expect(arith.reusedItems).toBeGreaterThanOrEqual(saved.length);
      const verdicts = (await getJsonl<ItemVerdicts>(stack.store, arith.resultsKey))!;
      expect(verdicts.map((v) => v.unit)).toEqual([...Array(ARITH_ITEMS).keys()]);

      // Stored items were read back, never asked again; only the ones not stored were (once more at most).
      const stats = stack.llm.stats();
      const items = parseBenchmark(readFileSync(ARITH, 'utf8')).items;
      const printOf = (unit: number): string =>
        fingerprintOf(
          EVAL_CALLS.answer,
          reasonerMessages(items[unit]!.question, 'qwen'),
          seedOf(0, 'eval', 'arith', unit),
          2,
        );
      for (const unit of savedUnits) expect(stats.fingerprintCounts[printOf(unit)]).toBe(1);
      const asked = items.map((item) => stats.fingerprintCounts[printOf(item.index)] ?? 0);
      expect(asked.every((n) => n === 1 || n === 2)).toBe(true);
      expect(stats.byCall[EVAL_CALLS.answer]?.requests).toBe(asked.reduce((a, b) => a + b, 0));
    } finally {
      await worker.stop('SIGKILL');
      stack.llm.configure({ capacity: 64, calls: { [EVAL_CALLS.answer]: { latencyMs: 0 } } });
    }
  });

  test('selfplay eval refuses what it cannot evaluate, with the reason', async () => {
    const runId = uniqueId('eval-none');
    const missing = await stack.withWorkers(() =>
      selfplay(
        [
          'eval',
          runId,
          '--recipe',
          'spice',
          '--bench',
          ARITH,
          '--set',
          `pools.orchestrator=${stack.queuePrefix}-orchestrator`,
        ],
        stack.cliEnv,
      ),
    );
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`eval: run "${runId}" has no committed iteration`);

    const badFile = await stack.withWorkers(() =>
      selfplay(
        [
          'eval',
          runId,
          '--iteration',
          '0',
          '--recipe',
          'spice',
          '--bench',
          'test/fixtures/eval/nope.jsonl',
          '--set',
          `pools.orchestrator=${stack.queuePrefix}-orchestrator`,
          '--set',
          `pools.rollout=${stack.queuePrefix}-rollout`,
        ],
        stack.cliEnv,
      ),
    );
    expect(badFile.code).toBe(1);
    expect(badFile.stderr).toContain('benchmark "nope" (test/fixtures/eval/nope.jsonl): no object at');
  });
});

/**
 * The start evaluation scores the version the run starts from: iteration 1's training step, which changes the
 * weights a synchronous kernel sampler serves, waits until the evaluation has answered. The scripted server
 * holds every evaluation request until either the step has begun or the iteration sits with its batch filtered
 * and no step started, which only that wait allows: without it the step begins while the requests are held.
 */
describe('the start evaluation before the first training step', () => {
  let stack: TestStack;
  /** The evaluation's requests wait on `released` until `release()`. */
  let open = false;
  let opened!: () => void;
  const released = new Promise<void>((resolve) => (opened = resolve));
  const release = (): void => {
    open = true;
    opened();
  };
  /** Whether the evaluation's requests were still held when iteration 1's step began. */
  let heldAtStep: boolean | undefined;
  beforeAll(async () => {
    stack = await startStack({
      llm: { beforeChat: (call) => (call === EVAL_CALLS.answer ? released : Promise.resolve()) },
      beforeStep: ({ iteration }) => {
        if (iteration === 1) {
          heldAtStep ??= !open;
          release();
        }
        return Promise.resolve();
      },
    });
  });
  afterAll(() => stack.close());

  test('iteration 1 steps only once its start evaluation has answered, which scores version 0', async () => {
    const runId = uniqueId('eval-start-fence');
    const config = stack.runConfig({
      iterations: 1,
      training: { policy: runId },
      inference: { requestTimeoutSeconds: 120, maxRetries: 3 },
      evaluation: { atStart: true, benchmarks: [{ name: 'arith', uri: ARITH, limit: 4 }] },
    });
    const outcome = await stack.withWorkers(async () => {
      const handle = await stack.client.workflow.start(selfPlayRun, {
        workflowId: runId,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [config],
      });
      const iteration = stack.client.workflow.getHandle(iterationChildId(runId, 1));
      const waitsForTheEvaluation = async (): Promise<boolean> => {
        const { stages } = await iteration.query(iterationProgressQuery);
        return (stages.filter?.finished ?? 0) > 0 && stages.update === undefined;
      };
      await waitFor('iteration 1 to step, or to wait with its batch filtered', async () =>
        heldAtStep !== undefined ? true : await waitsForTheEvaluation().catch(() => false),
      );
      release();
      return handle.result();
    });
    expect(outcome.lastCommitted).toBe(1);
    expect(heldAtStep).toBe(false);
    const manifest = (await getJson<Manifest>(stack.store, manifestKey(runId, 1)))!;
    expect(manifest.metrics.evalAtStart).toMatchObject({ version: 0, benchmarks: { arith: { items: 4 } } });
    expect(stack.llm.stats().byCall[EVAL_CALLS.answer]?.requests).toBe(4);
  });
});
