import path from 'node:path';
import { runEvaluation } from '../../cli/eval-command';
import {
  readLearningCurve,
  spicePoint,
  type LearningCurve,
  type PointReader,
  type SpicePoint,
} from '../../infra/toy-world/learning';
import type { ToyWorld } from '../../infra/toy-world/prepare';
import { TOY_WORLD_POLICY, toyWorldRunConfig } from '../../infra/toy-world/run-config';
import { spellPoint, type SpellPoint } from '../../infra/toy-world/spell-learning';
import type { SpellWorld } from '../../infra/toy-world/spell-prepare';
import { spellWorldRunConfig } from '../../infra/toy-world/spell-run-config';
import { withKernelRun } from './kernel-run';

/** A prepared world as a run needs it: its model, its files, its run config for a seed, and what its curve reads. */
export interface WorldRun<W> {
  model: string;
  /** The folder of the world's files (the run's input root). */
  dir: string;
  config: (seed: number) => Record<string, unknown>;
  read: PointReader<W>;
}

export const spiceWorldRun = (world: ToyWorld): WorldRun<SpicePoint> => ({
  model: world.model,
  dir: path.dirname(world.corpus),
  config: (seed) => toyWorldRunConfig(world, seed),
  read: spicePoint,
});

export const spellWorldRun = (world: SpellWorld): WorldRun<SpellPoint> => ({
  model: world.model,
  dir: world.dir,
  config: (seed) => spellWorldRunConfig(world, seed),
  read: spellPoint,
});

/**
 * One toy-world run on a kernel of its own (loaded with the warm-started model, so every run starts
 * from the same weights), a worker serving every pool, Temporal from the environment; returns its learning
 * curve. `seed` is the run's (and its evaluation's) seed; `overrides` edits the run config (iterations, the
 * controls, `pipeline.maxStaleness`).
 *
 * A one-step-off run (`pipeline.maxStaleness` ≥ 1) cannot evaluate in-run (the config refuses it: loading an
 * evaluated version onto the servers would change the weights under the next iteration's rollouts), so it
 * evaluates only its start (fenced to version 0), and its last committed version is evaluated after the run
 * through the `evaluateCheckpoint` workflow (`selfplay eval`), with the same settings. So is a synchronous
 * run's whose config evaluates at its start only (`evaluation.every: 0`), which times both modes alike.
 */
export function runToyWorld<W>(options: {
  world: WorldRun<W>;
  name: string;
  seed?: number;
  overrides?: (config: Record<string, unknown>) => Record<string, unknown>;
  storageUri?: (runId: string) => string;
}): Promise<LearningCurve<W>> {
  return withKernelRun(
    {
      model: options.world.model,
      name: options.name,
      policies: () => [TOY_WORLD_POLICY],
      inputRoots: [options.world.dir],
      ...(options.storageUri ? { storageUri: options.storageUri } : {}),
    },
    async (run) => {
      const base = { ...options.world.config(options.seed ?? 0), pools: run.baseConfig['pools'] };
      const edited: Record<string, unknown> = options.overrides ? options.overrides(base) : base;
      const oneStepOff =
        ((edited['pipeline'] as { maxStaleness?: number } | undefined)?.maxStaleness ?? 0) >= 1;
      const evaluation: { every?: number } = {
        ...(edited['evaluation'] as object),
        ...(oneStepOff ? { every: 0 } : {}),
      };
      const config = { ...edited, evaluation, weightSync: { engine: 'kernel' } };
      const outcome = await run.execute(config);
      // The last committed version, evaluated after the run with the run's own settings (`selfplay eval`).
      const afterRun =
        evaluation.every === 0
          ? (await runEvaluation(run.client, { runId: run.runId, config })).result
          : undefined;
      return readLearningCurve(
        run.storageUri,
        run.runId,
        outcome.lastCommitted,
        options.world.read,
        afterRun,
      );
    },
  );
}

/**
 * The controls and ablations of the learning runs: learning rate 0 and flipped advantages must not learn; the
 * ablations train one role's rows only (`training.ablateRoles`), to see where a gain comes from (SPICE's
 * roles); SPELL's frozen verifier trains no verifier rows (`spell.frozenRoles`), so its agreement with the
 * rule must stay where the warm start left it.
 */
export const CONTROLS = ['lr0', 'flipped', 'reasoner-only', 'challenger-only', 'frozen-verifier'] as const;
export type Control = (typeof CONTROLS)[number];

/** The config with a control applied (training's other fields kept). */
export function withControl(config: Record<string, unknown>, control: Control): Record<string, unknown> {
  if (control === 'frozen-verifier') {
    const spell = (config['spell'] ?? {}) as Record<string, unknown>;
    return { ...config, spell: { ...spell, frozenRoles: ['verifier'] } };
  }
  const training = config['training'] as Record<string, unknown>;
  const edits: Record<Exclude<Control, 'frozen-verifier'>, Record<string, unknown>> = {
    lr0: { optimizer: { ...(training['optimizer'] as object), learningRate: 0 } },
    flipped: { negateAdvantages: true },
    'reasoner-only': { ablateRoles: ['challenger'] },
    'challenger-only': { ablateRoles: ['reasoner'] },
  };
  return { ...config, training: { ...training, ...edits[control] } };
}
