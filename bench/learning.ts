import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type {
  Agreement,
  IterationPoint,
  LearningCurve,
  Measured,
  RunPoint,
  SpicePoint,
} from '../infra/toy-world/learning';
import type { MaePoint } from '../infra/toy-world/mae-learning';
import { prepareMaeWorld } from '../infra/toy-world/mae-prepare';
import { applySet } from '../cli/args';
import { prepareToyWorld } from '../infra/toy-world/prepare';
import type { SpellPoint } from '../infra/toy-world/spell-learning';
import { prepareSpellWorld } from '../infra/toy-world/spell-prepare';
import type { SspPoint } from '../infra/toy-world/ssp-learning';
import { prepareSspWorld, randomSearchIndex, warmStartSspWorld } from '../infra/toy-world/ssp-prepare';
import type { ScopePoint } from '../infra/toy-world/scope-learning';
import { ASKS } from '../infra/toy-world/scope-world';
import { prepareScopeWorld, warmStartScopeWorld } from '../infra/toy-world/scope-prepare';
import {
  BAND_WINDOW,
  ladderWindows,
  masteredRungShifts,
  offeredShare,
  passRateBand,
  type IterationWindow,
} from '../infra/toy-world/ladder';
import { RUNGS, type Rung } from '../infra/toy-world/world';
import { startTemporalDevServer } from '../test/support/temporal-server';
import {
  CONTROLS,
  maeWorldRun,
  runToyWorld,
  scopeWorldRun,
  spellWorldRun,
  spiceWorldRun,
  sspWorldRun,
  type Control,
  type ToyRunOptions,
  type WorldRun,
} from '../test/support/toy-world-run';

/**
 * `npm run bench -- learning [--recipe spice|mae|spell|ssp|scope] [--warm-start-seeds 0,1,2] [--iterations K] [--control C]
 * [--max-staleness K] [--streaming] [--warm-start-steps N] [--warm-start-threads N] [--set key=value ...]`:
 * for each warm-start seed, the recipe's toy world with its warm start of that seed (cached after its first
 * run), then one run of K iterations (run seed = warm-start seed) on a local stack (a Temporal dev server,
 * storage in a temporary directory, the kernel, a worker process). `--control` is one of lr0, flipped (must
 * not learn), for SPICE reasoner-only, challenger-only (ablations: one role's rows trained), for MAE
 * random-judge (every Judge call answered by a scripted grader that ignores the answer: must not learn), for
 * SPELL frozen-verifier (no verifier rows trained: its agreement with the rule must stay flat), for SSP
 * random-search (the search tool returns unrelated passages in training; the start and the last version are
 * evaluated after the run with the real one: must not learn), for SCOPE random-grader (the world's rule-based
 * judge grading every rubric at random: must not learn) and frozen-challenger (no Challenger rows trained:
 * its tasks stay the warm start's, against which the co-evolving Challenger's are compared).
 * `--max-staleness 1` runs one-step-off (its last version evaluated after the run,
 * test/support/toy-world-run.ts); `--streaming` with it starts each iteration once the previous one has
 * planned its first round (`pipeline.streaming`). `--warm-start-threads` runs the warm start on that many PyTorch threads
 * (another reduction order, so another model). `--set` edits the run config as `selfplay start --set` does
 * (e.g. `training.optimizer.learningRate=6e-4`), before the control.
 *
 * Prints per seed the start accuracy and the curve (held-out accuracy with its standard error where
 * evaluated, what each role trained, and the world's figures: for SPICE valid tasks, the Reasoner's pass
 * rate, the rungs of the Challenger's tasks and the pass rate per rung; for MAE the Judge's agreement with
 * the true verdicts, on all the pairs it scored and on those about held-out facts, the rungs of the
 * Proposer's questions and the Solver's accuracy on its trained answers; for SPELL valid questions, the
 * verifier's agreement with the rule check, the responder's pass rate and the groups each role trained; for
 * SSP the proposer's rule-valid and RAG-verified questions, the two-hop share of the verified ones, the
 * searches of both roles and the solver's pass rate on the verified questions; for SCOPE, whose held-out
 * figure is the Solver's rubric score, not an accuracy, the Challenger's candidates by status and its mean
 * rubric score on its valid tasks), the
 * gain with its error, how many iterations ran at each staleness where any was stale (`--max-staleness`), then
 * `heldout_start_spread <points>` (the largest minus the smallest start accuracy over the warm-start seeds)
 * and last `heldout_accuracy_gain <points>` (the mean gain over seeds).
 */
export async function main(args: string[]): Promise<void> {
  const option = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const recipe = option('--recipe') ?? 'spice';
  const iterations = Number(option('--iterations') ?? 40);
  const seeds = (option('--warm-start-seeds') ?? '0').split(',').map(Number);
  const control = option('--control') as Control | undefined;
  const maxStaleness = Number(option('--max-staleness') ?? 0);
  if (!(RECIPES as readonly string[]).includes(recipe))
    throw new Error(`--recipe: ${RECIPES.join(', ')}, not ${recipe}`);
  if (!Number.isInteger(maxStaleness) || maxStaleness < 0) throw new Error('--max-staleness: 0, 1, 2, ...');
  const streaming = args.includes('--streaming');
  if (streaming && maxStaleness < 1)
    throw new Error(
      '--streaming starts an iteration before the previous one commits: add --max-staleness 1 (or more)',
    );
  const controls = CONTROLS.filter((c) => RECIPE_CONTROLS[c] === undefined || RECIPE_CONTROLS[c] === recipe);
  if (control !== undefined && !controls.includes(control))
    throw new Error(`--control for ${recipe}: one of ${controls.join(', ')}, not ${String(control)}`);
  if (!Number.isInteger(iterations) || iterations < 1) throw new Error('--iterations: a positive integer');
  if (seeds.some((s) => !Number.isInteger(s) || s < 0))
    throw new Error('--warm-start-seeds: comma-separated non-negative integers, e.g. 0,1,2');

  // The kernels this bench starts refuse requests without a token, as in production.
  process.env.SELFPLAY_KERNEL_TOKEN ??= randomBytes(24).toString('hex');
  const steps = option('--warm-start-steps');
  const threads = option('--warm-start-threads');
  if (threads !== undefined && !(Number.isInteger(Number(threads)) && Number(threads) >= 1))
    throw new Error('--warm-start-threads: a positive integer');
  const warmStart = {
    ...(steps ? { warmStartSteps: Number(steps) } : {}),
    ...(threads ? { threads: Number(threads) } : {}),
  };
  const sets = args.flatMap((arg, i) => (args[i - 1] === '--set' ? [arg] : []));
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'bench-learning-'));
  const temporal = await startTemporalDevServer({ dbFile: path.join(scratch, 'temporal.db') });
  process.env.TEMPORAL_ADDRESS = temporal.address;
  const curves: Array<LearningCurve<unknown>> = [];
  try {
    for (const seed of seeds) {
      let t0 = Date.now();
      const world = await prepareWorld(recipe as Recipe, { warmStartSeed: seed, ...warmStart });
      console.log(`warm start ${seed}: ${JSON.stringify(world.warmStart)}`);
      console.log(`world ready in ${((Date.now() - t0) / 1000).toFixed(1)} s (${world.dir})`);
      t0 = Date.now();
      const run: RunOptions = {
        name: `learning-${recipe}-s${seed}`,
        seed,
        storageUri: (runId: string) => path.join(scratch, 'storage', runId),
        overrides: (c: Record<string, unknown>) => {
          const edited = {
            ...c,
            iterations,
            pipeline: { maxStaleness, ...(streaming ? { streaming } : {}) },
          };
          for (const assignment of sets) applySet(edited, assignment);
          return edited;
        },
        ...(control ? { control } : {}),
      };
      curves.push(await world.run(run, () => (Date.now() - t0) / 1000 / iterations));
    }
  } finally {
    await temporal.stop();
  }
  const starts = curves.map((c) => 100 * c.start.accuracy);
  const gains = curves.map((c) => c.gainPoints);
  const mean = gains.reduce((a, b) => a + b, 0) / gains.length;
  const spread = Math.sqrt(gains.reduce((a, g) => a + (g - mean) ** 2, 0) / Math.max(1, gains.length - 1));
  console.log(
    `start accuracy over ${starts.length} warm-start seed(s): ${starts.map((s) => s.toFixed(1)).join(', ')}`,
  );
  console.log(`gain over ${gains.length} seed(s): mean ${mean.toFixed(2)} points, std ${spread.toFixed(2)}`);
  console.log(`heldout_start_spread ${(Math.max(...starts) - Math.min(...starts)).toFixed(2)}`);
  console.log(`heldout_accuracy_gain ${mean.toFixed(2)}`);
}

const RECIPES = ['spice', 'mae', 'spell', 'ssp', 'scope'] as const;
type Recipe = (typeof RECIPES)[number];
type RunOptions = Omit<ToyRunOptions<unknown>, 'world'>;

/**
 * A recipe's world with its warm start (cached after its first run), and how a run of it goes: the curve
 * printed with the world's figures (`secondsPerIteration` read when the run ends), then returned.
 */
async function prepareWorld(
  recipe: Recipe,
  warmStart: { warmStartSeed: number; warmStartSteps?: number; threads?: number },
): Promise<{
  dir: string;
  warmStart: Record<string, unknown>;
  run: (run: RunOptions, secondsPerIteration: () => number) => Promise<LearningCurve<unknown>>;
}> {
  const seed = warmStart.warmStartSeed;
  if (recipe === 'mae') {
    const world = await prepareMaeWorld(warmStart);
    return { ...world, run: worldRunner(seed, maeWorldRun(world), maeFigures) };
  }
  if (recipe === 'scope') {
    const world = await prepareScopeWorld();
    const trained = await warmStartScopeWorld(world, {
      warmStartSeed: seed,
      ...(warmStart.warmStartSteps ? { steps: warmStart.warmStartSteps } : {}),
      ...(warmStart.threads ? { threads: warmStart.threads } : {}),
    });
    const run = scopeWorldRun({ ...world, model: trained.model });
    return {
      dir: world.dir,
      warmStart: trained.warmStart,
      run: worldRunner(seed, run, scopeFigures, scopeSummary),
    };
  }
  if (recipe === 'spell') {
    const world = await prepareSpellWorld(warmStart);
    return { ...world, run: worldRunner(seed, spellWorldRun(world), spellFigures, spellSummary) };
  }
  if (recipe === 'ssp') {
    const world = await prepareSspWorld();
    const { warmStartSteps, ...rest } = warmStart;
    const trained = await warmStartSspWorld(world, {
      ...rest,
      ...(warmStartSteps ? { steps: warmStartSteps } : {}),
    });
    const run = sspWorldRun({
      ...world,
      model: trained.model,
      randomSearchIndex: await randomSearchIndex(world),
    });
    return {
      dir: world.dir,
      warmStart: trained.warmStart,
      run: worldRunner(seed, run, sspFigures, sspSummary),
    };
  }
  const world = await prepareToyWorld(warmStart);
  return { ...world, run: worldRunner(seed, spiceWorldRun(world), spiceFigures, runSummary) };
}

/** A run of `world`: its curve printed with the world's figures and, when it has one, its summary line. */
function worldRunner<W>(
  seed: number,
  world: WorldRun<W>,
  figures: (point: IterationPoint<W>) => string,
  summary?: (points: ReadonlyArray<IterationPoint<W>>) => string,
): (run: RunOptions, secondsPerIteration: () => number) => Promise<LearningCurve<W>> {
  return async (run, secondsPerIteration) => {
    const curve = await runToyWorld({ ...run, world });
    printCurve(curve, seed, secondsPerIteration(), figures);
    if (summary) console.log(`seed ${seed}: ${summary(curve.points)}`);
    return curve;
  };
}

/** The controls that only one recipe's world has (the others apply to every recipe). */
const RECIPE_CONTROLS: Partial<Record<Control, Recipe>> = {
  'reasoner-only': 'spice',
  'challenger-only': 'spice',
  'random-judge': 'mae',
  'frozen-verifier': 'spell',
  'random-search': 'ssp',
  'random-grader': 'scope',
  'frozen-challenger': 'scope',
};

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const byRung = (values: Partial<Record<string, number>>): string =>
  RUNGS.map((rung) => `${rung} ${values[rung] === undefined ? '-' : pct(values[rung])}`).join(', ');

const spiceFigures = (p: IterationPoint<SpicePoint>): string =>
  `valid tasks ${pct(p.validTaskRate)}, ` +
  `pass rate ${pct(p.meanPassRate)}, histogram [${p.passRateHistogram.join(' ')}], ` +
  `rungs [${byRung(p.rungShares)}], pass by rung [${byRung(p.passRateByRung)}]`;

const maeFigures = (p: IterationPoint<MaePoint>): string =>
  `accepted into D ${pct(p.validTaskRate)}, judge agreement ${pct(p.judgeAgreement.rate)} of ${p.judgeAgreement.pairs}, ` +
  `on held-out facts ${pct(p.heldOutJudgeAgreement.rate)} of ${p.heldOutJudgeAgreement.pairs}, ` +
  `proposer: ladder ${pct(p.ladderShare)}, rungs [${byRung(p.rungShares)}], ` +
  `solver right ${pct(p.solverAccuracy)} [${byRung(p.solverAccuracyByRung)}]`;

const spellFigures = (p: IterationPoint<SpellPoint>): string =>
  `valid questions ${pct(p.validTaskRate)}, verifier-rule agreement ${pct(p.verifierRuleAgreement)} ` +
  `(right answers ${pct(p.verifierAgreementOnRight.rate)} of ${p.verifierAgreementOnRight.pairs}, ` +
  `wrong ${pct(p.verifierAgreementOnWrong.rate)} of ${p.verifierAgreementOnWrong.pairs}), ` +
  `responder pass rate ${pct(p.responderPassRate)}, questioner context ${p.questionerDocuments.toFixed(2)} ` +
  `documents (${p.withHistoryItems} with history), groups: ${p.solvableQuestions} solvable, ` +
  `${p.responderGroups} responder, ${p.verifierGroups} verifier`;

const sspFigures = (p: IterationPoint<SspPoint>): string =>
  `proposer: rule-valid ${p.ruleValid}, RAG-verified ${p.ragVerified} (two-hop ${pct(p.twoHopShare)}), ` +
  `${p.proposerSearches.toFixed(2)} searches; solver pass rate ${pct(p.solverPassRate)}, ` +
  `${p.solverSearches.toFixed(2)} searches`;
const scopeFigures = (p: IterationPoint<ScopePoint>): string =>
  `valid tasks ${p.validTasks} [${Object.entries(p.statusShares)
    .map(([status, share]) => `${status} ${pct(share)}`)
    .join(', ')}], challenger rubric score ${pct(p.challengerRubricScore)}, asks [${Object.entries(p.asks)
    .map(([ask, a]) => `${ask} ${pct(a.share)} at ${pct(a.rubricScore)}`)
    .join(', ')}]`;

/**
 * The Challenger's mean rubric score on its tasks, the f_diff they earn (most at 0.5) and its asks' shares of
 * its valid tasks: the first five iterations against the last five (fewer in a run of under ten).
 */
function scopeSummary(points: ReadonlyArray<IterationPoint<ScopePoint>>): string {
  const mean = (ps: ReadonlyArray<IterationPoint<ScopePoint>>, of: (p: ScopePoint) => number): number =>
    ps.reduce((a, p) => a + of(p), 0) / Math.max(1, ps.length);
  const window = Math.max(1, Math.min(5, Math.floor(points.length / 2)));
  const [first, last] = [points.slice(0, window), points.slice(-window)];
  const change = (of: (p: ScopePoint) => number, format = pct): string =>
    `${format(mean(first, of))} → ${format(mean(last, of))}`;
  const asks = [...ASKS, 'other'].map((ask) => `${ask} ${change((p) => p.asks[ask]?.share ?? 0)}`).join(', ');
  return (
    `the first ${window} iterations → the last ${window}: challenger rubric score ` +
    `${change((p) => p.challengerRubricScore)}, f_diff ${change(
      (p) => p.challengerDifficultyReward,
      (x) => x.toFixed(3),
    )}; ` +
    `shares of its valid tasks: ${asks}`
  );
}

/** An accuracy with its error, and per kind of item where the world tells kinds apart. */
function measured({ accuracy, standardError, byKind }: Measured): string {
  const kinds = Object.entries(byKind ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const breakdown = kinds.length ? ` (${kinds.map(([kind, a]) => `${kind} ${pct(a)}`).join(', ')})` : '';
  return `${pct(accuracy)} ± ${pct(standardError)}${breakdown}`;
}

function printCurve<W>(
  curve: LearningCurve<W>,
  seed: number,
  secondsPerIteration: number,
  figures: (point: IterationPoint<W>) => string,
): void {
  const { start } = curve;
  console.log(`seed ${seed}: held-out accuracy at start ${measured(start)}`);
  for (const p of curve.points) {
    const heldOut = p.heldOut ? `held-out ${measured(p.heldOut)}, ` : '';
    const trained = Object.entries(p.trained)
      .map(([role, t]) => `${role} ${t.steps} steps ${t.tokens} tokens |g| ${t.gradNorm.toFixed(3)}`)
      .join('; ');
    console.log(`  iteration ${p.iteration}: ${heldOut}${figures(p)}, trained: ${trained}`);
  }
  console.log(
    `seed ${seed}: gain ${curve.gainPoints.toFixed(2)} ± ${curve.gainError.toFixed(2)} points, ` +
      `${secondsPerIteration.toFixed(1)} s per iteration`,
  );
  if (curve.points.some((p) => p.staleness > 0))
    console.log(`seed ${seed}: ${stalenessSummary(curve.points)}`);
}

/** How stale the run's iterations were (`--max-staleness`): iterations per staleness, and the mean. */
function stalenessSummary(points: ReadonlyArray<RunPoint>): string {
  const counts = new Map<number, number>();
  for (const p of points) counts.set(p.staleness, (counts.get(p.staleness) ?? 0) + 1);
  const mean = points.reduce((sum, p) => sum + p.staleness, 0) / points.length;
  const byStaleness = [...counts].sort(([a], [b]) => a - b).map(([k, n]) => `${k}: ${n}`);
  return `iterations by staleness ${byStaleness.join(', ')}; mean ${mean.toFixed(2)}`;
}

/**
 * The Challenger's ladder and the Reasoner's pass rate over the run: each rung's share of the valid tasks of the
 * documents that offer it (ladder.ts) in the first five iterations and in the second half, the rungs the
 * Reasoner mastered in the first five (a mastered rung should lose share), and the mean pass rate per
 * iteration (SPICE's reward is highest at one half), its range, its range over five iterations and its mean.
 */
function runSummary(points: ReadonlyArray<IterationPoint<SpicePoint>>): string {
  const windows = ladderWindows(points.length);
  const share = (rung: Rung, w: IterationWindow): string => {
    const x = offeredShare(points, rung, w);
    return x === undefined ? '-' : (100 * x).toFixed(1);
  };
  const shares = RUNGS.map((rung) => `${rung} ${share(rung, windows.early)} → ${share(rung, windows.late)}%`);
  // Also against the first two iterations, the baseline the issue that asked for the ladder names (ladderWindows
  // says why the learning test reads five).
  const firstTwo = { from: 1, to: Math.min(2, points.length) };
  const mastered = masteredRungShifts(points, windows).map((s) => {
    const fromTwo = offeredShare(points, s.rung, firstTwo);
    return (
      `${s.rung} (${pct(s.passRate)} right) ${(100 * (s.late - s.early)).toFixed(1)} points` +
      (fromTwo === undefined ? '' : `, ${(100 * (s.late - fromTwo)).toFixed(1)} from iterations 1-2`)
    );
  });
  const passRates = points.map((p) => 100 * p.meanPassRate);
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const band = passRateBand(points);
  return (
    `rung shares of the documents offering them, iterations ${windows.early.from}-${windows.early.to} → ` +
    `${windows.late.from}-${windows.late.to}: ${shares.join(', ')}; ` +
    `mastered in ${windows.mastery.from}-${windows.mastery.to}: ${mastered.join(', ') || 'none'}; ` +
    `pass rate per iteration ${Math.min(...passRates).toFixed(1)} to ${Math.max(...passRates).toFixed(1)}%` +
    (band ? `, over ${BAND_WINDOW} iterations ${pct(band.min)} to ${pct(band.max)}` : '') +
    `, mean ${mean(passRates).toFixed(1)}%`
  );
}

/** The proposer's verified questions over the run: the first two iterations against the last two. */
function sspSummary(points: ReadonlyArray<IterationPoint<SspPoint>>): string {
  const mean = (ps: ReadonlyArray<IterationPoint<SspPoint>>, of: (p: SspPoint) => number): number =>
    ps.reduce((a, p) => a + of(p), 0) / Math.max(1, ps.length);
  const [first, last] = [points.slice(0, 2), points.slice(-2)];
  return (
    `RAG-verified questions per iteration, iterations 1-2 → last two: ` +
    `${mean(first, (p) => p.ragVerified).toFixed(1)} → ${mean(last, (p) => p.ragVerified).toFixed(1)}, ` +
    `their two-hop share ${pct(mean(first, (p) => p.twoHopShare))} → ${pct(mean(last, (p) => p.twoHopShare))}`
  );
}

/**
 * The verifier's agreement with the rule check over the run, the first five iterations against the last five:
 * overall, and on right and wrong answers apart (pooled over the window's judgments), which the share of
 * right answers does not move; and the questioner's mean context, which the history memory widens.
 */
function spellSummary(points: ReadonlyArray<IterationPoint<SpellPoint>>): string {
  const window = Math.max(1, Math.min(5, Math.floor(points.length / 2)));
  const [first, last] = [points.slice(0, window), points.slice(-window)];
  const mean = (ps: typeof points, of: (p: SpellPoint) => number): number =>
    ps.reduce((a, p) => a + of(p), 0) / Math.max(1, ps.length);
  const overall = (ps: typeof points): number => mean(ps, (p) => p.verifierRuleAgreement);
  const pooled = (ps: typeof points, of: (p: SpellPoint) => Agreement): number => {
    const pairs = ps.reduce((a, p) => a + of(p).pairs, 0);
    return ps.reduce((a, p) => a + of(p).rate * of(p).pairs, 0) / Math.max(1, pairs);
  };
  const change = (of: (ps: typeof points) => number): string => `${pct(of(first))} → ${pct(of(last))}`;
  return (
    `verifier-rule agreement, the first ${window} iterations → the last ${window}: ${change(overall)}; ` +
    `on right answers ${change((ps) => pooled(ps, (p) => p.verifierAgreementOnRight))}, ` +
    `on wrong answers ${change((ps) => pooled(ps, (p) => p.verifierAgreementOnWrong))}; questioner context ` +
    `${mean(first, (p) => p.questionerDocuments).toFixed(2)} → ${mean(last, (p) => p.questionerDocuments).toFixed(2)} documents`
  );
}
