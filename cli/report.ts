import type { ObjectStore } from '../activities/clients/storage';
import { runPrefix } from '../activities/clients/storage/keys';
import {
  versionsOf,
  versionsText,
  type Manifest,
  type ScheduleStep,
  type StageName,
} from '../contracts/selfplay';
import { escapeXml, lineChart, stackedBarChart } from './report-svg';
import { keptManifests } from './lineage';
import { evalAccuracySeries, evalColumns, evalSearchSeries } from './report-eval';
import { readManifest } from '../activities/stages/manifest';

/** The ids of the report's plots (tests and readers look them up). */
export const PLOT_IDS = {
  reward: 'plot-mean-reward',
  passRate: 'plot-pass-rate',
  validTasks: 'plot-valid-task-rate',
  entropy: 'plot-entropy',
  stages: 'plot-stage-time',
  eval: 'plot-eval-accuracy',
} as const;

/** The plot of searches per answer, drawn only for a run whose evaluations searched (`evaluation.rollout: "search"`). */
export const SEARCH_PLOT_ID = 'plot-eval-searches';

const STAGE_ORDER: StageName[] = [
  'sync',
  'plan',
  'propose',
  'gate',
  'solve',
  'judge',
  'filter',
  'update',
  'commit',
];

/** Every kept manifest of a run (an iteration with a manifest happened; a rollback drops the later ones). */
export const loadManifests = (store: ObjectStore, runId: string): Promise<Manifest[]> =>
  keptManifests(store, runId, (lineage) => lineageManifests(store, lineage));

/** Every manifest committed under one storage id, by iteration. */
async function lineageManifests(store: ObjectStore, runId: string): Promise<Manifest[]> {
  const prefix = `${runPrefix(runId)}/`;
  const iterations = (await store.list(prefix)).flatMap((k) => {
    const match = /^iter-(\d+)\/manifest\.json$/.exec(k.slice(prefix.length));
    return match ? [Number(match[1])] : [];
  });
  const manifests = await Promise.all(iterations.map((n) => readManifest(store, runId, n)));
  return manifests
    .filter((m): m is Manifest => m !== undefined && Number.isFinite(m.iteration))
    .sort((a, b) => a.iteration - b.iteration);
}

const num = (v: unknown): number => (typeof v === 'number' ? v : NaN);

/** Each role's entropy in the iteration's steps: the `entropy.{role}` metrics (update.ts flatTrainMetrics). */
function entropyByRole(m: Manifest): Record<string, number> {
  const prefix = 'entropy.';
  return Object.fromEntries(
    Object.values(m.metrics?.train ?? {}).flatMap((step) =>
      Object.entries(step).flatMap(([k, v]) => (k.startsWith(prefix) ? [[k.slice(prefix.length), v]] : [])),
    ),
  );
}

/** One self-contained HTML page: inline SVG plots and a table, no scripts, no external resources. */
export function renderReport(
  runId: string,
  manifests: readonly Manifest[],
  generatedAt = new Date().toISOString(),
): string {
  const iterations = manifests.map((m) => m.iteration);
  const recipeOf = (m: Manifest) => m.metrics?.recipe;
  const roles = [...new Set(manifests.flatMap((m) => Object.keys(recipeOf(m)?.meanRewardByRole ?? {})))];
  /** One line per role over the iterations. */
  const roleLines = (names: readonly string[], value: (m: Manifest, role: string) => number) =>
    names.map((name) => ({
      name,
      points: manifests.map((m): [number, number] => [m.iteration, value(m, name)]),
    }));

  const reward = lineChart({
    id: PLOT_IDS.reward,
    title: 'Mean reward per role',
    xLabel: 'iteration',
    yLabel: 'mean reward',
    series: roleLines(roles, (m, role) => num(recipeOf(m)?.meanRewardByRole?.[role])),
  });

  const buckets = Math.max(0, ...manifests.map((m) => recipeOf(m)?.passRateHistogram?.length ?? 0));
  const G = Math.max(0, buckets - 1);
  const shares = manifests.map((m) => {
    const h = recipeOf(m)?.passRateHistogram ?? [];
    const total = h.reduce((s, v) => s + (Number.isFinite(v) && v > 0 ? v : 0), 0);
    return Array.from({ length: buckets }, (_, k) => (total > 0 ? num(h[k]) / total : 0));
  });
  const passRate = stackedBarChart({
    id: PLOT_IDS.passRate,
    title: 'Pass-rate distribution (k of G answers correct)',
    xLabel: 'iteration',
    yLabel: 'share of tasks',
    categories: iterations,
    yDomain: [0, 1],
    stacks: Array.from({ length: buckets }, (_, k) => ({
      name: `${k}/${G} correct`,
      values: shares.map((s) => s[k] ?? 0),
    })),
  });

  const validTasks = lineChart({
    id: PLOT_IDS.validTasks,
    title: 'Valid-task rate',
    xLabel: 'iteration',
    yLabel: 'valid tasks',
    yDomain: [0, 1],
    series: [
      {
        name: 'valid-task rate',
        points: manifests.map((m) => [m.iteration, num(recipeOf(m)?.validTaskRate)]),
      },
    ],
  });

  const entropyRoles = [...new Set(manifests.flatMap((m) => Object.keys(entropyByRole(m))))];
  const entropy = lineChart({
    id: PLOT_IDS.entropy,
    title: 'Policy entropy per role (training step)',
    xLabel: 'iteration',
    yLabel: 'nats per token',
    series: roleLines(entropyRoles, (m, role) => num(entropyByRole(m)[role])),
  });

  const stagesSeen = new Set(manifests.flatMap((m) => Object.keys(m.metrics?.stages ?? {})));
  const stageNames = [
    ...STAGE_ORDER.filter((s) => stagesSeen.has(s)),
    ...[...stagesSeen].filter((s) => !(STAGE_ORDER as string[]).includes(s)).sort(),
  ];
  const wall = (m: Manifest, s: string): number =>
    num((m.metrics?.stages as Record<string, { wallSeconds?: number } | undefined>)?.[s]?.wallSeconds);
  const stages = stackedBarChart({
    id: PLOT_IDS.stages,
    title: 'Stage time per iteration (wall seconds)',
    xLabel: 'iteration',
    yLabel: 'seconds',
    categories: iterations,
    stacks: stageNames.map((s) => ({ name: s, values: manifests.map((m) => wall(m, s)) })),
  });

  // The axis spans the data, not [0, 1]: a gain of a few points is what a run's curve has to show.
  const heldOut = lineChart({
    id: PLOT_IDS.eval,
    title: 'Held-out accuracy per benchmark',
    xLabel: 'iteration',
    yLabel: 'accuracy',
    series: evalAccuracySeries(manifests),
  });
  const searchSeries = evalSearchSeries(manifests);
  const searches = searchSeries.length
    ? lineChart({
        id: SEARCH_PLOT_ID,
        title: 'Searches per answer (agentic evaluation)',
        xLabel: 'iteration',
        yLabel: 'searches',
        series: searchSeries,
      })
    : '';
  const evals = evalColumns(manifests);

  const cell = (v: unknown, digits = 3): string =>
    typeof v === 'number' && Number.isFinite(v)
      ? escapeXml(Number.isInteger(v) ? String(v) : v.toFixed(digits))
      : '–';
  // Rounds gathered per step, for a recipe that accumulates (SPELL).
  const rounds = manifests.some((m) => m.metrics?.rounds !== undefined);
  // A staged schedule's own numbering (SCOPE: the Challenger's stage, then the Solver's, per round).
  const staged = manifests.some((m) => m.schedule !== undefined);
  const header = [
    'iteration',
    ...(staged ? ['stage'] : []),
    'policy versions',
    'committed at',
    'valid-task rate',
    ...roles.map((r) => `reward: ${r}`),
    ...roles.map((r) => `rows: ${r}`),
    'zero-advantage',
    ...(rounds ? ['rounds'] : []),
    ...evals.map((c) => c.header),
    'stage seconds',
  ];
  const rows = manifests.map((m) => {
    const r = recipeOf(m);
    const totalSeconds = stageNames.reduce((s, n) => s + (Number.isFinite(wall(m, n)) ? wall(m, n) : 0), 0);
    return [
      cell(m.iteration),
      ...(staged ? [escapeXml(m.schedule ? stepText(m.schedule) : '–')] : []),
      escapeXml(m.policies ? versionsText(versionsOf(m.policies)) : '–'),
      escapeXml(m.committedAt ?? ''),
      cell(r?.validTaskRate),
      ...roles.map((role) => cell(r?.meanRewardByRole?.[role])),
      ...roles.map((role) => cell(r?.rowsByRole?.[role])),
      cell(r?.zeroAdvantageFraction),
      ...(rounds ? [cell(m.metrics?.rounds)] : []),
      ...evals.map((c) => cell(c.value(m))),
      cell(totalSeconds, 1),
    ];
  });
  const table =
    `<table id="iterations"><thead><tr>${header.map((h) => `<th>${escapeXml(h)}</th>`).join('')}</tr></thead>` +
    `<tbody>${rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`).join('')}</tbody></table>`;

  const recipes = [...new Set(manifests.map((m) => m.recipe))].join(', ') || 'unknown';
  const summary = manifests.length
    ? `${manifests.length} committed iteration${manifests.length === 1 ? '' : 's'} (${iterations[0]}–${iterations[iterations.length - 1]}), recipe ${recipes}`
    : 'no committed iteration';
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>selfplay report: ${escapeXml(runId)}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; margin: 0 0 4px; }
p.meta { color: #555; margin: 0 0 16px; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
svg.chart { border: 1px solid #ddd; font-family: system-ui, sans-serif; }
table { border-collapse: collapse; margin-top: 20px; font-size: 12px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; }
</style>
</head>
<body>
<h1>selfplay report: ${escapeXml(runId)}</h1>
<p class="meta">${escapeXml(summary)}; generated ${escapeXml(generatedAt)}</p>
<div class="charts">
${reward}
${passRate}
${validTasks}
${entropy}
${stages}
${heldOut}
${searches}
</div>
${table}
</body>
</html>
`;
}

/** `challenger 3 (round 2)`: the stage, the step within it and the round. */
const stepText = (s: ScheduleStep): string => `${s.stage} ${s.stageIteration} (round ${s.round})`;
