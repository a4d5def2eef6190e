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
import { startSspGrader } from '../../infra/toy-world/ssp-grader';
import { sspPoint, type SspPoint } from '../../infra/toy-world/ssp-learning';
import { sspWorldOptions, type SspWorld } from '../../infra/toy-world/ssp-prepare';
import { sspWorldRunConfig } from '../../infra/toy-world/ssp-run-config';
import { withKernelRun } from './kernel-run';
import { startScriptedLlm } from './scripted-llm/server';

/**
 * A prepared world as a run needs it: its folder (the input root its files are read from), its model, its
 * run config for a seed, and what its curve reads.
 */
export interface WorldRun<W> {
  dir: string;
  model: string;
  /** The run config for a seed; `serverUrl` is the world's own server's, for a world that has one. */
  config: (seed: number, serverUrl?: string) => Record<string, unknown>;
  read: PointReader<W>;
  /** A server the world's runs need (SSP's rule-based grader), started for each run and closed after it. */
  server?: () => Promise<{ url: string; close(): Promise<void> }>;
  /**
   * The world's own controls (SSP's random search), as config edits. Such a control changes the tool the
   * evaluation uses too, so its run evaluates nothing in-run: its start (before the run) and its last version
   * (after it) are evaluated with the config the control did not edit.
   */
  controls?: Partial<Record<Control, (config: Record<string, unknown>) => Record<string, unknown>>>;
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
  config: (seed, graderUrl) => {
    if (graderUrl === undefined) throw new Error("SSP's world runs with its grader: start it (server)");
    return sspWorldRunConfig(world, graderUrl, seed);
  },
  read: sspPoint,
  server: () => startSspGrader(sspWorldOptions(world)),
  controls: {
    'random-search': (config) => ({
      ...config,
      retrieval: { ...(config['retrieval'] as object), index: world.randomSearchIndex },
    }),
  },
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
  const judge =
    options.control === 'random-judge' ? await startScriptedLlm({ invalidTaskRate: 0 }) : undefined;
  const server = await options.world.server?.();
  try {
    return await runWorld(options, judge?.url, server?.url);
  } finally {
    await server?.close();
    await judge?.close();
  }
}

function runWorld<W>(
  options: ToyRunOptions<W>,
  judgeUrl: string | undefined,
  serverUrl: string | undefined,
): Promise<LearningCurve<W>> {
  return withKernelRun(
    {
      model: options.world.model,
      name: options.name,
      policies: () => [TOY_WORLD_POLICY],
      inputRoots: [options.world.dir, ...(options.inputRoots ?? [])],
      ...(options.storageUri ? { storageUri: options.storageUri } : {}),
      ...(options.workerEnv ? { workerEnv: options.workerEnv } : {}),
    },
    async (run) => {
      const base: Record<string, unknown> = {
        ...options.world.config(options.seed ?? 0, serverUrl),
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
      );
    },
  );
}

/**
 * The controls and ablations of the learning runs: learning rate 0 and flipped advantages must not learn; the
 * ablations train one role's rows only (`training.ablateRoles`), to see where a gain comes from (SPICE's
 * roles); MAE's random judge answers every Judge call with a score that ignores the answer, so a gain that
 * survives it did not come from the Judge's signal; SPELL's frozen verifier trains no verifier rows
 * (`spell.frozenRoles`), so its agreement with the rule must stay where the warm start left it; SSP's random
 * search (`WorldRun.controls`) returns passages unrelated to the query in training, so a gain that survives it
 * did not come from learning to search.
 */
export const CONTROLS = [
  'lr0',
  'flipped',
  'reasoner-only',
  'challenger-only',
  'random-judge',
  'frozen-verifier',
  'random-search',
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
  if (control === 'frozen-verifier') {
    const spell = (config['spell'] ?? {}) as Record<string, unknown>;
    return { ...config, spell: { ...spell, frozenRoles: ['verifier'] } };
  }
  if (control === 'random-search')
    throw new Error("the random-search control is a search world's own (WorldRun.controls): SSP's world");
  const edits: Record<
    Exclude<Control, 'random-judge' | 'frozen-verifier' | 'random-search'>,
    Record<string, unknown>
  > = {
    lr0: { optimizer: { ...(training['optimizer'] as object), learningRate: 0 } },
    flipped: { negateAdvantages: true },
    'reasoner-only': { ablateRoles: ['challenger'] },
    'challenger-only': { ablateRoles: ['reasoner'] },
  };
  return { ...config, training: { ...training, ...edits[control] } };
}
