import { readLearningCurve, type LearningCurve } from '../../infra/toy-world/learning';
import type { ToyWorld } from '../../infra/toy-world/prepare';
import { TOY_WORLD_POLICY, toyWorldRunConfig } from '../../infra/toy-world/run-config';
import { withKernelRun } from './kernel-run';

/**
 * One toy-world SPICE run on a kernel of its own (loaded with the warm-started model, so every run starts
 * from the same weights), a worker serving every pool, Temporal from the environment; returns its learning
 * curve. `overrides` edits the toy world's run config (iterations, seed, the controls).
 */
export function runToyWorld(options: {
  world: ToyWorld;
  name: string;
  overrides?: (config: Record<string, unknown>) => Record<string, unknown>;
  storageUri?: (runId: string) => string;
}): Promise<LearningCurve> {
  return withKernelRun(
    {
      model: options.world.model,
      name: options.name,
      policies: () => [TOY_WORLD_POLICY],
      ...(options.storageUri ? { storageUri: options.storageUri } : {}),
    },
    async (run) => {
      const base = { ...toyWorldRunConfig(options.world), pools: run.baseConfig['pools'] };
      const config = options.overrides ? options.overrides(base) : base;
      const outcome = await run.execute({ ...config, weightSync: { engine: 'kernel' } });
      return readLearningCurve(run.storageUri, run.runId, outcome.lastCommitted);
    },
  );
}

/** The negative controls of the learning test: learning rate 0, and advantages with their sign flipped. */
export const CONTROLS = ['lr0', 'flipped'] as const;
export type Control = (typeof CONTROLS)[number];

/** The config with a control applied (training's other fields kept). */
export function withControl(config: Record<string, unknown>, control: Control): Record<string, unknown> {
  const training = config['training'] as Record<string, unknown>;
  const edit =
    control === 'flipped'
      ? { negateAdvantages: true }
      : { optimizer: { ...(training['optimizer'] as object), learningRate: 0 } };
  return { ...config, training: { ...training, ...edit } };
}
