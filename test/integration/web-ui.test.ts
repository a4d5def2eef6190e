import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import type { selfPlayRun } from '../../workflows';
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
 * only this server sees.
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
    page = await browser.newPage({ viewport: { width: 1920, height: 700 } });
  });
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

    await page.goto(
      `${uiUrl}/namespaces/default/workflows?query=${encodeURIComponent('SelfPlayRecipe = "spice"')}`,
    );
    // Room for the added columns in the screenshot (the table scrolls sideways otherwise): no Run ID or End.
    await configureColumns(page, { add: COLUMNS, remove: ['Run ID', 'End'] });
    await page.getByRole('button', { name: 'Collapse saved views' }).click();
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

    const png = path.join(process.env.WEB_UI_SCREENSHOT_DIR ?? os.tmpdir(), `${runId}.png`);
    await page.screenshot({ path: png });
    expect(readFileSync(png).subarray(1, 4).toString('latin1')).toBe('PNG');
  });
});
