/**
 * Drives the Temporal Web UI (v2.42, bundled with the Temporal CLI 1.5.1 dev server) in headless Chromium
 * through playwright-core, the way an operator would: no UI API calls, only what a person clicks and reads.
 * Selectors are the UI's labels, roles and data-testids, learnt from its DOM; nothing depends on layout.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Chromium from Debian (`apt-get install chromium`; infra/local/test-all.sh installs it), or CHROMIUM. */
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

/** The system Chromium: playwright-core downloads no browser, and the test machines reach no CDN. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: apt-get install -y chromium (infra/local/test-all.sh does), or set CHROMIUM`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    // Root in a container: no sandbox; a small /dev/shm: use /tmp; no GPU.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

export interface StartWorkflowForm {
  workflowId: string;
  taskQueue: string;
  workflowType: string;
  /** The ONE plain-JSON argument (json/plain encoding, the form's default). */
  input: unknown;
}

/** Workflows → Start Workflow, fills the form, submits; resolves once the UI says the workflow started. */
export async function startWorkflowFromUi(page: Page, uiUrl: string, form: StartWorkflowForm): Promise<void> {
  await page.goto(`${uiUrl}/namespaces/default/workflows`);
  await page.getByRole('button', { name: 'Start Workflow' }).click();
  await page.getByLabel('Workflow ID').fill(form.workflowId);
  await page.getByLabel('Task Queue').fill(form.taskQueue);
  await page.getByLabel('Workflow Type').fill(form.workflowType);
  // "Data" labels the wrapper of a CodeMirror editor (a contenteditable textbox), not a form control.
  const dataId = await page
    .locator('label')
    .filter({ hasText: /^\s*Data\s*$/ })
    .getAttribute('for');
  const editor = page.locator(`[id="${dataId}"]`).getByRole('textbox');
  await editor.fill(JSON.stringify(form.input));
  // The editor pretty-prints its JSON on blur, which moves the button while a mouse click's blur runs, so that
  // the click lands where the button was: press it from the keyboard, which no layout shift can miss.
  await page.getByTestId('start-workflow-button').press('Enter');
  await page.getByText('Workflow started successfully').waitFor();
}

/**
 * Adds (custom search attribute) columns through the table's column chooser and removes others, as an
 * operator would; the UI keeps the choice in the browser's storage.
 */
export async function configureColumns(
  page: Page,
  columns: { add: readonly string[]; remove?: readonly string[] },
): Promise<void> {
  await page.getByTestId('workflows-summary-table-configuration-button').click();
  for (const column of columns.add)
    await page.getByTestId(`orderable-list-item-${column}-add-button`).click();
  for (const column of columns.remove ?? [])
    await page.getByTestId(`orderable-list-item-${column}-remove-button`).click();
  await page.getByTestId('drawer-close-button').click();
  for (const column of columns.add)
    await page.getByTestId(`workflows-summary-table-header-cell-${column}`).waitFor();
}

/** The list's row for a workflow, as `{column header: cell text}`; waits for the row to appear. */
export async function workflowRow(page: Page, workflowId: string): Promise<Record<string, string>> {
  const row = page.getByTestId('workflows-summary-configurable-table-row').filter({
    has: page.getByRole('link', { name: workflowId, exact: true }),
  });
  await row.waitFor();
  const headers = await page.locator('table', { has: row }).locator('thead th').allTextContents();
  const values = await row.locator(':scope > td').allTextContents();
  return Object.fromEntries(headers.map((header, i) => [header.trim(), values[i]?.trim() ?? '']));
}
