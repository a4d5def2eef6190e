import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Browser, Page } from 'playwright-core';
import { loadManifests } from '../../cli/report';
import { runStatus } from '../../cli/status';
import type { selfPlayRun } from '../../workflows';
import { iterationChildId, progressQuery } from '../../workflows/messages';
import { selfplay } from '../support/cli';
import { freePort } from '../support/free-port';
import { startStack, uniqueId, type TestStack } from '../support/stack';
import { startTemporalDevServer, type TemporalDevServer } from '../support/temporal-server';
import { waitFor } from '../support/wait';
import { launchChromium, configureColumns, startWorkflowFromUi, workflowRow } from '../support/web-ui';

/** The search attributes the README tells operators to add as columns. */
const COLUMNS = [
  'SelfPlayRecipe',
  'SelfPlayIteration',
  'SelfPlayState',
  'SelfPlayMeanReward',
  'SelfPlayValidTaskRate',
] as const;

/**
 * An operator starts a run from the Temporal Web UI (README, "Start a run from the Temporal Web UI") and
 * follows it in the workflow list, in a real browser. The global setup's server is headless, so this file
 * starts its own dev server with the UI; its workers use the production task queues (`selfplay-*`), which
 * only this server sees. The second test hands a run started from the form to the `selfplay` CLI, as a process.
 */
describe('the Temporal Web UI', () => {
  let server: TemporalDevServer;
  let uiUrl: string;
  let stack: TestStack;
  let browser: Browser;
  let page: Page;
  beforeAll(async () => {
    server = await startTemporalDevServer({ uiPort: await freePort() });
    uiUrl = server.uiUrl ?? '';
    stack = await startStack({ temporalAddress: server.address, queuePrefix: 'selfplay' });
    browser = await launchChromium();
  });
  // A page in a fresh browser context per test: no column choice or other storage carried from the last one.
  beforeEach(async () => {
    page = await browser.newPage({ viewport: { width: 1920, height: 700 } });
  });
  afterEach(() => page?.close());
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
    await server?.stop();
  });

  test('starts a SPICE run from the Start Workflow form and lists it with its recipe and iteration', async () => {
    const runId = uniqueId('webui-spice');
    // Exactly what the form's Input field gets: one plain JSON object, small enough for the test stack.
    // No `pools`: the run's default task queues are the ones this stack's workers poll.
    const { pools: _pools, ...input } = stack.runConfig({ iterations: 1 });

    const outcome = await stack.withWorkers(async () => {
      await startWorkflowFromUi(page, uiUrl, {
        workflowId: runId,
        taskQueue: 'selfplay-orchestrator',
        workflowType: 'selfPlayRun',
        input,
      });
      return stack.client.workflow.getHandle<typeof selfPlayRun>(runId).result();
    });
    expect(outcome).toMatchObject({ runId, lastCommitted: 1, versions: { policy: 1 } });
    // The form sent ONE json/plain payload holding the object, exactly as an SDK client would.
    const history = await stack.client.workflow.getHandle(runId).fetchHistory();
    const payloads = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
    expect(payloads).toHaveLength(1);
    expect(Buffer.from(payloads[0]?.metadata?.encoding ?? []).toString()).toBe('json/plain');
    expect(JSON.parse(Buffer.from(payloads[0]?.data ?? []).toString())).toEqual(input);

    // The list reads visibility, which trails the workflow's last upsert: wait until it has the final values.
    const query = `WorkflowId = "${runId}" AND SelfPlayState = "completed"`;
    await waitFor('visibility to list the completed run', async () => {
      const { count } = await stack.client.workflow.count(query);
      return count === 1;
    });

    await openRunList();
    const row = await workflowRow(page, runId);
    expect(row).toMatchObject({
      Status: 'Completed',
      Type: 'selfPlayRun',
      SelfPlayRecipe: 'spice',
      SelfPlayIteration: '1',
      SelfPlayState: 'completed',
    });
    expect(Object.keys(row)).not.toContain('Run ID');
    // The reward columns show the committed iteration's summary, as the run returned it.
    const summary = outcome.recent.at(-1)?.summary;
    expect(Number(row.SelfPlayMeanReward)).toBeCloseTo(summary?.meanReward ?? NaN, 6);
    expect(Number(row.SelfPlayValidTaskRate)).toBeCloseTo(summary?.validTaskRate ?? NaN, 6);
    expect(summary?.validTaskRate).toBeGreaterThan(0);

    await screenshot(runId);
  });

  test('a run started from the form is paused, resumed, rolled back and forked with the selfplay CLI', async () => {
    const runId = uniqueId('webui-cli');
    const r1 = `${runId}.r1`;
    const forkId = uniqueId('webui-fork');
    const cli = (...args: string[]) => selfplay(args, stack.cliEnv);
    // Each completion holds the model a while, so an iteration takes seconds.
    const latencyMs = 400;
    stack.llm.configure({ latencyMs });
    /**
     * `selfplay ARGS` while the model is slow (6 s a completion), so the run cannot get ahead of the command
     * (past the commit it acts on, or to its end) however long the process takes on a loaded machine; the
     * model is back to speed once the command's effect is seen.
     */
    const actOnRun = async (effect: string, seen: () => Promise<boolean>, ...args: string[]) => {
      stack.llm.configure({ latencyMs: 6_000 });
      const done = waitFor(effect, seen);
      void done.finally(() => stack.llm.configure({ latencyMs })).catch(() => undefined);
      const result = await cli(...args);
      if (result.code === 0) await done;
      return result;
    };
    // Its own policy name: the trainer's versions of `policy` belong to the first test's run.
    const { pools: _pools, ...input } = stack.runConfig({ iterations: 4, training: { policy: runId } });
    const run = stack.client.workflow.getHandle<typeof selfPlayRun>(runId);
    const progress = () => run.query(progressQuery);
    const steps = (lineage: string) =>
      stack.trainer
        .stats()
        .steps.filter((s) => s.runId === lineage)
        .map((s) => [s.iteration, s.baseVersion]);
    const kept = async (id: string) =>
      (await loadManifests(stack.store, id)).map((m) => [m.iteration, m.runId]);

    await stack.withWorkers(async () => {
      await startWorkflowFromUi(page, uiUrl, {
        workflowId: runId,
        taskQueue: 'selfplay-orchestrator',
        workflowType: 'selfPlayRun',
        input,
      });

      // Paused after its first commit: the iteration in flight holds at a stage boundary, no new one starts.
      await waitFor('the first commit', async () => (await progress()).lastCommitted >= 1);
      const isPaused = async () => (await progress()).paused;
      const paused = await actOnRun('the run to pause', isPaused, 'pause', runId);
      expect(paused.out).toContain(`${runId}: paused, iteration `);
      expect(paused.code).toBe(0);
      await waitFor('the paused run to hold', async () => {
        const snapshot = await runStatus(stack.client, runId);
        return snapshot.progress?.iterationInFlight ? snapshot.iteration?.held === true : true;
      });
      const held = await progress();
      const requests = stack.llm.stats().requests;
      const status = await cli('status', runId);
      expect(status.stdout).toContain(
        `run ${runId} (spice): iteration ${held.iteration}/4, paused; last committed ${held.lastCommitted}, ${runId} v${held.lastCommitted}`,
      );
      expect(status.stdout).toMatch(
        new RegExp(
          `\\npaused: (held at a stage boundary|no iteration starts); resume with: selfplay resume ${runId}\\n`,
        ),
      );
      // While the CLI process started, connected and printed, nothing moved: no completion, commit or child.
      expect(stack.llm.stats().requests).toBe(requests);
      expect(await progress()).toMatchObject({
        state: 'paused',
        iteration: held.iteration,
        lastCommitted: held.lastCommitted,
        iterationInFlight: held.iterationInFlight,
      });
      await expect(
        stack.client.workflow.getHandle(iterationChildId(runId, held.iteration + 1)).describe(),
      ).rejects.toBeInstanceOf(WorkflowNotFoundError);

      const resumed = await cli('resume', runId);
      expect(resumed.out).toContain(`${runId}: running, iteration ${held.iteration}/4`);
      expect(resumed.code).toBe(0);

      // Rolled back while running, after two commits: the iteration in flight is cancelled and the run goes on
      // with iteration 2 from iteration 1's checkpoint, in lineage RUN.r1.
      await waitFor('a second commit', async () => (await progress()).lastCommitted >= 2);
      const moved = async () => (await progress()).lineage === r1;
      const rolled = await actOnRun(`the run to go on in ${r1}`, moved, 'rollback', runId, '--to', '1');
      expect(rolled.out).toContain(
        `${runId}: rolled back to iteration 1 (${runId} v1); going on with iteration 2 in lineage ${r1}, running`,
      );
      expect(rolled.code).toBe(0);
      expect(await run.result()).toMatchObject({ runId, lastCommitted: 4, versions: { [runId]: 4 } });
      expect(await kept(runId)).toEqual([
        [1, runId],
        [2, r1],
        [3, r1],
        [4, r1],
      ]);
      expect(stack.trainer.stats().restores).toContainEqual(
        expect.objectContaining({ policy: runId, version: 1 }),
      );
      expect(steps(r1)).toEqual([
        [2, 1],
        [3, 2],
        [4, 3],
      ]);
      const done = await cli('status', runId);
      expect(done.stdout).toContain(`run ${runId}: completed; 4 iteration(s) committed, ${runId} v4`);

      // Forked from iteration 1 (the run's own lineage holds it) into a new run that goes on with 2..4.
      const forked = await cli('fork', runId, '--from', '1', '--id', forkId);
      expect(forked.out).toContain(
        `forked ${runId} at iteration 1 (${runId}): started run ${forkId}, going on with iteration 2`,
      );
      expect(forked.code).toBe(0);
      const fork = stack.client.workflow.getHandle<typeof selfPlayRun>(forkId);
      expect(await fork.result()).toMatchObject({
        runId: forkId,
        lastCommitted: 4,
        versions: { [runId]: 4 },
      });
      expect((await fork.query(progressQuery)).resumedFrom).toEqual({ runId, iteration: 1 });
      expect(await kept(forkId)).toEqual([
        [2, forkId],
        [3, forkId],
        [4, forkId],
      ]);
      expect(steps(forkId)).toEqual([
        [2, 1],
        [3, 2],
        [4, 3],
      ]);
    });

    // Both in the list, with their recipe and last committed iteration.
    const query = `(WorkflowId = "${runId}" OR WorkflowId = "${forkId}") AND SelfPlayState = "completed"`;
    await waitFor('visibility to list both completed runs', async () => {
      const { count } = await stack.client.workflow.count(query);
      return count === 2;
    });
    await openRunList();
    for (const id of [runId, forkId]) {
      expect(await workflowRow(page, id)).toMatchObject({
        Status: 'Completed',
        Type: 'selfPlayRun',
        SelfPlayRecipe: 'spice',
        SelfPlayIteration: '4',
        SelfPlayState: 'completed',
      });
    }
    await screenshot(runId);
  });

  /** The SPICE runs in the workflow list, with the SelfPlay columns; collapsed saved views leave room. */
  async function openRunList(): Promise<void> {
    await page.goto(
      `${uiUrl}/namespaces/default/workflows?query=${encodeURIComponent('SelfPlayRecipe = "spice"')}`,
    );
    // Room for the added columns in the screenshot (the table scrolls sideways otherwise): no Run ID or End.
    await configureColumns(page, { add: COLUMNS, remove: ['Run ID', 'End'] });
    await page.getByRole('button', { name: 'Collapse saved views' }).click();
  }

  async function screenshot(name: string): Promise<void> {
    const png = path.join(process.env.WEB_UI_SCREENSHOT_DIR ?? os.tmpdir(), `${name}.png`);
    await page.screenshot({ path: png });
    expect(readFileSync(png).subarray(1, 4).toString('latin1')).toBe('PNG');
  }
});
