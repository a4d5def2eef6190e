import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { LocalStore } from '../../../activities/clients/storage';
import { putJson } from '../../../activities/clients/storage/codec';
import { manifestKey, metricsKey } from '../../../activities/clients/storage/keys';
import { loadManifests, PLOT_IDS, renderReport, SEARCH_PLOT_ID } from '../../../cli/report';
import type { Manifest } from '../../../contracts/selfplay';
import type { BenchmarkResult } from '../../../contracts/evaluation';

/** Chromium from Debian (`apt-get install chromium`; infra/local/test-all.sh installs it), or CHROMIUM. */
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

const manifest = (runId: string, iteration: number): Manifest => ({
  v: 2,
  runId,
  iteration,
  recipe: 'spice',
  policies: { policy: { version: iteration } },
  configHash: 'abc',
  committedAt: `2026-01-0${iteration}T00:00:00.000Z`,
  artifacts: {},
  metrics: {
    recipe: {
      documents: 8,
      validTaskRate: Math.min(1, 0.2 + 0.15 * iteration),
      invalidReasons: {},
      passRateHistogram: [8 - iteration, 2, 3, iteration, 1],
      zeroAdvantageFraction: 0.3,
      meanRewardByRole: {
        challenger: 0.1 * iteration,
        reasoner: iteration === 3 ? NaN : 0.5 - 0.05 * iteration,
      },
      rowsByRole: { challenger: 16, reasoner: 64 },
      extra: {},
    },
    train: {
      policy: { gradNorm: 1, 'entropy.challenger': 2 - 0.1 * iteration, 'entropy.reasoner': 1.5 },
    },
    stages: {
      plan: { wallSeconds: 1, busySeconds: 1 },
      propose: { wallSeconds: 20 + iteration, busySeconds: 40 },
      gate: { wallSeconds: 2, busySeconds: 2 },
      solve: { wallSeconds: 30, busySeconds: 60 },
      judge: { wallSeconds: 5, busySeconds: 5 },
      filter: { wallSeconds: 3, busySeconds: 3 },
      update: { wallSeconds: 12, busySeconds: 12 },
      commit: { wallSeconds: 0.5, busySeconds: 0.5 },
    },
    reusedUnits: 0,
  },
});

describe('selfplay report', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'report-cli-'));
  const store = new LocalStore(path.join(dir, 'storage'));
  const runId = 'spice-run-1';

  beforeAll(async () => {
    for (const i of [2, 1, 4, 3, 5]) {
      await putJson(store, manifestKey(runId, i), manifest(runId, i));
      await putJson(store, metricsKey(runId, i), manifest(runId, i).metrics);
    }
    // another run with a shared prefix must not leak in
    await putJson(store, manifestKey(`${runId}-other`, 1), manifest(`${runId}-other`, 1));
  });

  test('loads every committed manifest of the run in iteration order', async () => {
    const manifests = await loadManifests(store, runId);
    expect(manifests.map((m) => m.iteration)).toEqual([1, 2, 3, 4, 5]);
    expect(await loadManifests(store, 'absent')).toEqual([]);
  });

  test('renders one self-contained page with its plots and a table, all text escaped', async () => {
    const manifests = await loadManifests(store, runId);
    manifests[0]!.metrics.recipe.meanRewardByRole['<img src=x onerror=alert(1)>'] = 0.2;
    const html = renderReport('run <script>alert(1)</script>', manifests, 'now');
    for (const id of Object.values(PLOT_IDS)) expect(html).toContain(`<svg id="${id}"`);
    expect(html).toContain('<table id="iterations">');
    expect(html).not.toMatch(/<script|<img|NaN|Infinity/);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(html).toContain('run &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('4/4 correct');
    expect(html.match(/<tr>/g)).toHaveLength(1 + 5);
    expect(html).not.toContain('<th>rounds</th>'); // SPICE gathers no rounds
    // The entropy plot has one line per role of the steps' `entropy.{role}` metrics.
    const entropyPlot = html.slice(html.indexOf(`<svg id="${PLOT_IDS.entropy}"`));
    const entropySvg = entropyPlot.slice(0, entropyPlot.indexOf('</svg>'));
    expect(entropySvg).toContain('>challenger<');
    expect(entropySvg).toContain('>reasoner<');
    expect(entropySvg).not.toContain('no data');
  });

  test('a recipe that gathers rounds gets a rounds column', async () => {
    const manifests = await loadManifests(store, runId);
    manifests.forEach((m, i) => (m.metrics.rounds = i + 1));
    const html = renderReport(runId, manifests, 'now');
    expect(html).toContain('<th>zero-advantage</th><th>rounds</th><th>stage seconds</th>');
    expect(html).toMatch(/<td>0\.300<\/td><td>3<\/td><td>[\d.]+<\/td><\/tr>/);
  });

  test("a staged schedule's manifests get a stage column with the step and round", async () => {
    const manifests = await loadManifests(store, runId);
    manifests.forEach(
      (m, i) =>
        (m.schedule = { stage: i < 2 ? 'challenger' : 'solver', round: 1, stageIteration: (i % 2) + 1 }),
    );
    const html = renderReport(runId, manifests, 'now');
    expect(html).toContain('<th>iteration</th><th>stage</th><th>policy versions</th>');
    expect(html).toContain('<td>3</td><td>solver 1 (round 1)</td>');
    expect(renderReport(runId, await loadManifests(store, runId), 'now')).not.toContain('<th>stage</th>');
  });

  test('held-out accuracy: a line per benchmark from the start, and accuracy, pass@n and maj@n columns', async () => {
    const manifests = await loadManifests(store, runId);
    const result = (accuracy: number, n: number, version: number): BenchmarkResult => ({
      format: 'gsm8k',
      items: 10,
      n,
      accuracy,
      passAtK: n > 1 ? { 1: accuracy, [n]: accuracy + 0.2 } : {},
      majAtK: n > 1 ? { 1: accuracy, [n]: accuracy + 0.1 } : {},
      noAnswer: 0,
      reusedItems: 0,
      resultsKey: `runs/r/eval/policy/v${version}/x.jsonl.gz`,
    });
    manifests[0]!.metrics.evalAtStart = {
      policy: 'policy',
      version: 0,
      benchmarks: { gsm8k: result(0.25, 4, 0), amc: result(0.5, 1, 0) },
    };
    manifests[1]!.metrics.eval = { policy: 'policy', version: 2, benchmarks: { gsm8k: result(0.375, 4, 2) } };
    manifests[3]!.metrics.eval = {
      policy: 'policy',
      version: 4,
      benchmarks: { gsm8k: result(0.5, 4, 4), amc: result(0.75, 1, 4) },
    };
    const html = renderReport(runId, manifests, 'now');
    const plot = html.slice(html.indexOf(`<svg id="${PLOT_IDS.eval}"`));
    const svg = plot.slice(0, plot.indexOf('</svg>'));
    expect(svg).not.toContain('no data');
    const dots = (name: string): string[] => {
      const group = svg.slice(svg.indexOf(`<g class="series" data-name="${name}">`));
      return [...group.slice(0, group.indexOf('</g>')).matchAll(/<title>([^<]+)<\/title>/g)].map(
        (m) => m[1]!,
      );
    };
    expect(dots('gsm8k')).toEqual(['gsm8k @ 0: 0.25', 'gsm8k @ 2: 0.375', 'gsm8k @ 4: 0.5']);
    expect(dots('amc')).toEqual(['amc @ 0: 0.5', 'amc @ 4: 0.75']);
    // The accuracy axis spans the data (0.25 to 0.75), not [0, 1], so a gain of a few points is visible.
    const ticks = [...svg.matchAll(/<g class="y-axis">(.*?)<\/g>/g)].flatMap((m) =>
      [...m[1]!.matchAll(/>([\d.]+)<\/text>/g)].map((t) => Number(t[1])),
    );
    expect(Math.min(...ticks)).toBeGreaterThanOrEqual(0.2);
    expect(Math.max(...ticks)).toBeLessThanOrEqual(0.8);
    expect(html).toContain(
      '<th>accuracy: gsm8k</th><th>pass@4: gsm8k</th><th>maj@4: gsm8k</th><th>accuracy: amc</th><th>stage seconds</th>',
    );
    // Iteration 4's row: its own evaluation; iteration 1's: none (the start's is drawn at 0, not in its row).
    expect(html).toMatch(
      /<td>0\.500<\/td><td>0\.700<\/td><td>0\.600<\/td><td>0\.750<\/td><td>[\d.]+<\/td><\/tr>/,
    );
    expect(html).toMatch(
      /<tr><td>1<\/td>(<td>[^<]*<\/td>)*<td>–<\/td><td>–<\/td><td>–<\/td><td>–<\/td><td>[\d.]+<\/td><\/tr>/,
    );
  });

  test('an agentic evaluation adds a plot and a column of searches per answer; others have neither', async () => {
    const manifests = await loadManifests(store, runId);
    expect(renderReport(runId, manifests, 'now')).not.toContain(SEARCH_PLOT_ID);
    const searched = (accuracy: number, searchesPerAnswer: number): BenchmarkResult => ({
      format: 'simple',
      items: 8,
      n: 1,
      accuracy,
      passAtK: {},
      majAtK: {},
      noAnswer: 0,
      searchesPerAnswer,
      reusedItems: 0,
      resultsKey: 'runs/r/eval/policy/v1/towns.jsonl.gz',
    });
    manifests[0]!.metrics.eval = { policy: 'policy', version: 1, benchmarks: { towns: searched(0.5, 1.25) } };
    manifests[2]!.metrics.eval = { policy: 'policy', version: 3, benchmarks: { towns: searched(0.75, 2) } };
    const html = renderReport(runId, manifests, 'now');
    const plot = html.slice(html.indexOf(`<svg id="${SEARCH_PLOT_ID}"`));
    const svg = plot.slice(0, plot.indexOf('</svg>'));
    expect([...svg.matchAll(/<title>([^<]+)<\/title>/g)].map((m) => m[1])).toEqual([
      'Searches per answer (agentic evaluation)',
      'towns @ 1: 1.25',
      'towns @ 3: 2',
    ]);
    expect(html).toContain('<th>accuracy: towns</th><th>searches/answer: towns</th>');
    expect(html).toMatch(/<td>0\.750<\/td><td>2<\/td>/);
  });

  test('an empty run still renders (every plot says "no data")', () => {
    const html = renderReport('r', []);
    expect(html.match(/no data/g)).toHaveLength(Object.keys(PLOT_IDS).length);
  });

  test('headless Chromium renders it; the screenshot is a real image', () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `${CHROMIUM} is missing: apt-get install -y chromium (infra/local/test-all.sh does), or set CHROMIUM`,
      );
    }
    return loadManifests(store, runId).then((manifests) => {
      const file = path.join(dir, 'report.html');
      writeFileSync(file, renderReport(runId, manifests));
      const png = path.join(process.env.REPORT_SCREENSHOT_DIR ?? dir, 'report.png');
      const run = spawnSync(
        CHROMIUM,
        [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-dev-shm-usage',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--no-first-run',
          `--user-data-dir=${mkdtempSync(path.join(os.tmpdir(), 'chromium-'))}`,
          `--screenshot=${png}`,
          '--window-size=1200,1600',
          pathToFileURL(file).href,
        ],
        { timeout: 90_000, encoding: 'utf8' },
      );
      expect({ status: run.status, error: run.error?.message }).toEqual({ status: 0, error: undefined });
      expect(statSync(png).size).toBeGreaterThan(20_000);
      expect(readFileSync(png).subarray(1, 4).toString('latin1')).toBe('PNG');
    });
  });
});
