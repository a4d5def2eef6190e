import { runEvaluation } from '../../cli/eval-command';
import {
  readLearningCurve,
  spicePoint,
  type LearningCurve,
  type PointReader,
  type SpicePoint,
} from '../../infra/toy-world/learning';
import { maePoint, type MaePoint } from '../../infra/toy-world/mae-learning';
import type { MaeWorld } from '../../infra/toy-world/mae-prepare';
import { maeWorldRunConfig } from '../../infra/toy-world/mae-run-config';
import type { ToyWorld } from '../../infra/toy-world/prepare';
import { TOY_WORLD_POLICY, toyWorldRunConfig } from '../../infra/toy-world/run-config';
import { spellPoint, type SpellPoint } from '../../infra/toy-world/spell-learning';
import type { SpellWorld } from '../../infra/toy-world/spell-prepare';
import { spellWorldRunConfig } from '../../infra/toy-world/spell-run-config';
import { sspHeldOutScore, sspPoint, type SspPoint } from '../../infra/toy-world/ssp-learning';
import { sspWorldOptions, type SspWorld } from '../../infra/toy-world/ssp-prepare';
import { sspWorldRunConfig } from '../../infra/toy-world/ssp-run-config';
import { withKernelRun } from './kernel-run';
import type { HeldOutScore } from '../../infra/toy-world/learning';
import { scopeHeldOutScore, scopePoint, type ScopePoint } from '../../infra/toy-world/scope-learning';
import type { ScopeWorld } from '../../infra/toy-world/scope-prepare';
import { SCOPE_POLICIES, scopeWorldRunConfig } from '../../infra/toy-world/scope-run-config';
import { startScopeGraderOf, startSspGrader } from './grader-servers';
import { startScriptedLlm } from './scripted-llm/server';

/**
 * A prepared world as a run needs it: its folder (the input root its files are read from), its model, its
 * run config for a seed, and what its curve reads.
 */
export interface WorldRun<W> {
  dir: string;
  model: string;
  /** The run config for a seed; a world of several policies or its own judge reads where they are served. */
  config: (seed: number, served: ServedEndpoints) => Record<string, unknown>;
  read: PointReader<W>;
  /** The policies, a kernel each (default: the one `TOY_WORLD_POLICY`). */
  policies?: readonly string[];
  /**
   * The world's own judge endpoint for a run, if it has one: SCOPE's grader (a random one under a control),
   * SSP's grader of its RAG verification and answers.
   */
  judge?: (control: Control | undefined) => Promise<WorldJudge>;
  /** How an evaluation's held-out figure is read (default: the benchmark's accuracy). */
  score?: HeldOutScore;
  /**
   * The world's own controls (SSP's random search), as config edits. Such a control changes the tool the
   * evaluation uses too, so its run evaluates nothing in-run: its start (before the run) and its last version
   * (after it) are evaluated with the config the control did not edit.
   */
  controls?: Partial<Record<Control, (config: Record<string, unknown>) => Record<string, unknown>>>;
}

/** A world's judge server, closed after its run. */
export interface WorldJudge {
  url: string;
  close(): Promise<void>;
}

/** The kernels' URLs by policy, and the world's judge's URL when it has one. */
export interface ServedEndpoints {
  kernels: Record<string, string>;
  judgeUrl?: string;
}

export const spiceWorldRun = (world: ToyWorld): WorldRun<SpicePoint> => ({
  dir: world.dir,
  model: world.model,
  config: (seed) => toyWorldRunConfig(world, seed),
  read: spicePoint,
});

export const maeWorldRun = (world: MaeWorld): WorldRun<MaePoint> => ({
  dir: world.dir,
  model: world.model,
  config: (seed) => maeWorldRunConfig(world, seed),
  read: maePoint,
});

/** SSP's world: the verifier and judge calls answered by the world's grader (ssp-grader.ts). */
export const sspWorldRun = (
  world: SspWorld & { model: string; randomSearchIndex: string },
): WorldRun<SspPoint> => ({
  dir: world.dir,
  model: world.model,
  config: (seed, served) => {
    if (served.judgeUrl === undefined) throw new Error("SSP's world runs with its grader as the judge");
    return sspWorldRunConfig(world, served.judgeUrl, seed);
  },
  read: sspPoint,
  score: sspHeldOutScore(world.heldOut),
  judge: () => startSspGrader(sspWorldOptions(world)),
  controls: {
    'random-search': (config) => ({
      ...config,
      retrieval: { ...(config['retrieval'] as object), index: world.randomSearchIndex },
    }),
  },
});

export const scopeWorldRun = (world: ScopeWorld & { model: string }): WorldRun<ScopePoint> => ({
  dir: world.dir,
  model: world.model,
  policies: Object.values(SCOPE_POLICIES),
  config: (seed, served) => {
    if (served.judgeUrl === undefined) throw new Error("SCOPE's toy world runs with its grader as the judge");
    return scopeWorldRunConfig(world, seed, { kernels: served.kernels, judgeUrl: served.judgeUrl });
  },
  read: scopePoint,
  judge: (control) => startScopeGraderOf(world.corpus, control === 'random-grader' ? 'random' : 'rule'),
  score: scopeHeldOutScore(world.corpus, world.heldOut),
});

export const spellWorldRun = (world: SpellWorld): WorldRun<SpellPoint> => ({
  dir: world.dir,
  model: world.model,
  config: (seed) => spellWorldRunConfig(world, seed),
  read: spellPoint,
});

/**
 * One toy-world run on a kernel of its own (loaded with the warm-started model, so every run starts from the
 * same weights), a worker serving every pool, Temporal from the environment; returns its learning curve.
 * `seed` is the run's (and its evaluation's) seed; `overrides` edits the run config (iterations,
 * `pipeline.maxStaleness`), and `control` applies one of the controls after it (`withControl`; the random
 * judge is a scripted server started for the run).
 *
 * A one-step-off run (`pipeline.maxStaleness` ≥ 1) cannot evaluate in-run (the config refuses it: loading an
 * evaluated version onto the servers would change the weights under the next iteration's rollouts), so it
 * evaluates only its start (fenced to version 0), and its last committed version is evaluated after the run
 * through the `evaluateCheckpoint` workflow (`selfplay eval`), with the same settings. So is a synchronous
 * run's whose config evaluates at its start only (`evaluation.every: 0`), which times both modes alike.
 */
export interface ToyRunOptions<W> {
  world: WorldRun<W>;
  name: string;
  seed?: number;
  overrides?: (config: Record<string, unknown>) => Record<string, unknown>;
  control?: Control;
  storageUri?: (runId: string) => string;
  /** Directories of inputs other than the world's (e.g. its files converted to Parquet). */
  inputRoots?: string[];
  workerEnv?: Record<string, string>;
}

export async function runToyWorld<W>(options: ToyRunOptions<W>): Promise<LearningCurve<W>> {
  const { world, control } = options;
  const judge = world.judge
    ? await world.judge(control)
    : control === 'random-judge'
      ? await startScriptedLlm({ invalidTaskRate: 0 })
      : undefined;
  try {
    return await runWorld(options, judge?.url);
  } finally {
    await judge?.close();
  }
}

function runWorld<W>(options: ToyRunOptions<W>, judgeUrl: string | undefined): Promise<LearningCurve<W>> {
  return withKernelRun(
    {
      model: options.world.model,
      name: options.name,
      policies: () => [...(options.world.policies ?? [TOY_WORLD_POLICY])],
      inputRoots: [options.world.dir, ...(options.inputRoots ?? [])],
      ...(options.storageUri ? { storageUri: options.storageUri } : {}),
      ...(options.workerEnv ? { workerEnv: options.workerEnv } : {}),
    },
    async (run) => {
      const kernels = Object.fromEntries(Object.entries(run.kernels).map(([p, k]) => [p, k.url]));
      const served = { kernels, ...(judgeUrl === undefined ? {} : { judgeUrl }) };
      const base: Record<string, unknown> = {
        ...options.world.config(options.seed ?? 0, served),
        pools: run.baseConfig['pools'],
      };
      const overridden = options.overrides ? options.overrides(base) : base;
      const worldControl = options.control && options.world.controls?.[options.control];
      const edited = worldControl
        ? worldControl(overridden)
        : options.control
          ? withControl(overridden, options.control, judgeUrl)
          : overridden;
      const oneStepOff =
        ((edited['pipeline'] as { maxStaleness?: number } | undefined)?.maxStaleness ?? 0) >= 1;
      const evaluation: { every?: number; atStart?: boolean } = {
        ...(edited['evaluation'] as object),
        ...(oneStepOff || worldControl ? { every: 0 } : {}),
        ...(worldControl ? { atStart: false } : {}),
      };
      const config = { ...edited, evaluation, weightSync: { engine: 'kernel' } };
      // `selfplay eval` with the run's own settings, or for a world's control the uncontrolled ones.
      const evaluate = async (weightSync: string, iteration?: number) =>
        (
          await runEvaluation(run.client, {
            runId: run.runId,
            config: { ...(worldControl ? overridden : config), weightSync: { engine: weightSync } },
            ...(iteration === undefined ? {} : { iteration }),
          })
        ).result;
      // The base weights have no snapshot to sync: they are evaluated before the run, as the kernel serves them.
      const atStart = worldControl ? await evaluate('none', 0) : undefined;
      const outcome = await run.execute(config);
      const afterRun = evaluation.every === 0 ? await evaluate('kernel') : undefined;
      return readLearningCurve(
        run.storageUri,
        run.runId,
        outcome.lastCommitted,
        options.world.read,
        afterRun,
        atStart,
        options.world.score,
      );
    },
  );
}

/**
 * A run config edit: `iterations` iterations, held-out evaluation at the start and after the last only. The
 * evaluations are most of a toy-world run's cost, and a learning test reads only the first and the last.
 */
export const evaluatedAtEnd =
  (iterations: number) =>
  (config: Record<string, unknown>): Record<string, unknown> => ({
    ...config,
    iterations,
    evaluation: { ...(config['evaluation'] as object), every: iterations },
  });

/**
 * The controls and ablations of the learning runs: learning rate 0 and flipped advantages must not learn; the
 * ablations train one role's rows only (`training.ablateRoles`), to see where a gain comes from (SPICE's
 * roles); MAE's random judge answers every Judge call with a score that ignores the answer, so a gain that
 * survives it did not come from the Judge's signal; SPELL's frozen verifier trains no verifier rows
 * (`spell.frozenRoles`), so its agreement with the rule must stay where the warm start left it; SSP's random
 * search (`WorldRun.controls`) returns passages unrelated to the query in training, so a gain that survives it
 * did not come from learning to search; SCOPE's random grader grades every rubric at random (its gates and
 * rubrics stay the rule's), so no answer earns its grades, and its frozen Challenger trains no Challenger rows
 * (the paper's stale curriculum: the tasks stay the warm start's while the Solver improves).
 */
export const CONTROLS = [
  'lr0',
  'flipped',
  'reasoner-only',
  'challenger-only',
  'random-judge',
  'frozen-verifier',
  'random-search',
  'random-grader',
  'frozen-challenger',
] as const;
export type Control = (typeof CONTROLS)[number];

/**
 * The config with a control applied (training's other fields kept). The random judge is the scripted
 * server at `judgeUrl` (`inference.roles.judge`): for the questions of the toy world, which it cannot
 * check, it writes a score of 1 to 10 drawn from the request's seed; a separate judge model cannot be the
 * trained Judge, so the Judge role is frozen (and the endpoint never brought to the policy's versions).
 */
export function withControl(
  config: Record<string, unknown>,
  control: Control,
  judgeUrl?: string,
): Record<string, unknown> {
  const training = config['training'] as Record<string, unknown>;
  if (control === 'random-judge') {
    if (judgeUrl === undefined) throw new Error('the random-judge control needs the scripted judge server');
    const mae = (config['mae'] ?? {}) as Record<string, unknown>;
    const inference = (config['inference'] ?? {}) as Record<string, unknown>;
    return {
      ...config,
      inference: {
        ...inference,
        roles: { judge: { baseUrl: judgeUrl, model: 'scripted-policy', frozen: true } },
      },
      mae: { ...mae, trainRoles: { proposer: true, solver: true, judge: false } },
    };
  }
  // The world's own judge already grades at random (`WorldRun.judge`): the config is the gain run's.
  if (control === 'random-grader') return config;
  if (control === 'frozen-verifier') {
    const spell = (config['spell'] ?? {}) as Record<string, unknown>;
    return { ...config, spell: { ...spell, frozenRoles: ['verifier'] } };
  }
  if (control === 'random-search')
    throw new Error("the random-search control is a search world's own (WorldRun.controls): SSP's world");
  const edits: Record<
    Exclude<Control, 'random-judge' | 'frozen-verifier' | 'random-search' | 'random-grader'>,
    Record<string, unknown>
  > = {
    lr0: { optimizer: { ...(training['optimizer'] as object), learningRate: 0 } },
    flipped: { negateAdvantages: true },
    'reasoner-only': { ablateRoles: ['challenger'] },
    'challenger-only': { ablateRoles: ['reasoner'] },
    'frozen-challenger': { ablateRoles: ['challenger'] },
  };
  return { ...config, training: { ...training, ...edits[control] } };
}
