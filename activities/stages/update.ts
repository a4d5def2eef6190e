import type {
  PolicyCommit,
  PublishInput,
  UpdateInput,
  UpdateResult,
  WeightSnapshot,
} from '../../contracts/selfplay';
import type { RunConfig } from '../../config/schema';
import type { ActivityDeps } from './deps';
import { TrainerClient } from '../clients/trainer';
import { checkpointPrefix, snapshotPrefix } from '../clients/storage/keys';
import { boundToken, trainerUrlFor } from '../../config/env';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import { Context } from '@temporalio/activity';
import { beatIntervalMs, heartbeatWhile } from '../lib/heartbeat';
import { watchStep, type StepWatch } from './step-progress';
import {
  COMPLETE_MARKER,
  type LossSpec,
  type TrainStepMetrics,
  type TrainStepRequest,
  type UpdateSpec,
} from '../clients/trainer-contract';
import { recordTrainMetrics } from './stage-metrics';

/**
 * The trainer pool's activities. One training step per policy per iteration under the idempotency key
 * `(runId, iteration, policy)`: however often this is retried, the kernel applies the step once (one policy
 * version, made of one optimizer step per mini-batch when `training.update` asks for several). A kernel
 * that lost its state (restarted, preempted) answers 409; it is restored from the committed checkpoint and
 * the same step is sent again. After the step the kernel's state is checkpointed and, when inference
 * servers need it, a sampler snapshot of the new version is published.
 *
 * The update's heartbeat says which of these it waits on (its progress: a retry sends the applied step again
 * and gets its first answer at once, so getting past it is progress), and, while the step runs, the kernel's
 * rows trained and mini-batches done beside it (shown, not compared: a failed step is rolled back whole).
 */
export function updateActivities(deps: ActivityDeps) {
  const trainerFor = (config: RunConfig, policy: string): TrainerClient => {
    const url = trainerUrlFor(config, deps.env, policy);
    const token = boundToken(deps.env, url);
    return new TrainerClient(url, {
      timeoutMs: config.timeouts.trainStepMinutes * 60_000,
      maxRetries: config.inference.maxRetries,
      ...(token ? { token } : {}),
    });
  };

  /**
   * Where a run's base weights (version 0) are checkpointed before its first step. No commit names it: a first
   * step that the kernel applied but the run did not commit (its checkpoint hit a full disk, its answer was lost
   * to a crash) leaves the kernel at version 1 and the run at 0, and this is the checkpoint that brings the
   * kernel back, where otherwise only a restart of the kernel could.
   */
  const baseCheckpointKey = (runId: string, policy: string): string => checkpointPrefix(runId, policy, 0);

  /** The checkpoint of the committed version: the commit's, or at version 0 the base checkpoint once written. */
  const checkpointOf = async (runId: string, policy: string, committed: PolicyCommit) => {
    if (committed.checkpointUri || committed.version !== 0) return committed.checkpointUri;
    const key = baseCheckpointKey(runId, policy);
    return (await deps.store.exists(`${key}/${COMPLETE_MARKER}`)) ? deps.store.uri(key) : undefined;
  };

  /** Brings a kernel that is not at the committed version back to it from the committed checkpoint, or fails clearly. */
  const restoreTo = async (
    trainer: TrainerClient,
    runId: string,
    policy: string,
    committed: PolicyCommit,
    signal: AbortSignal,
  ) => {
    const { version } = committed;
    const checkpointUri = await checkpointOf(runId, policy, committed);
    if (!checkpointUri) {
      const state = await trainer.policyState(policy, signal);
      throw nonRetryable(
        NON_RETRYABLE.versionConflict,
        `the kernel's policy "${policy}" is at version ${state.policyVersion}, the run at ${version}, and no checkpoint ` +
          `of version ${version} was committed (training.checkpoint is off, or the run is new); restart the kernel from the run's weights`,
      );
    }
    // The kernel refuses (409 lineage_conflict, with the reason) when it holds another run's weights.
    const restored = await trainer.restore(policy, { uri: checkpointUri, lineage: runId }, signal);
    if (restored.policyVersion !== version) {
      throw nonRetryable(
        NON_RETRYABLE.versionConflict,
        `checkpoint ${checkpointUri} holds version ${restored.policyVersion}, expected ${version}`,
      );
    }
  };

  const publish = async (
    trainer: TrainerClient,
    runId: string,
    policy: string,
    version: number,
    signal: AbortSignal,
  ): Promise<WeightSnapshot> => {
    const uri = deps.store.uri(snapshotPrefix(runId, policy, version));
    const published = await trainer.publish(policy, { uri, version }, signal);
    const { policyVersion, format, sha256 } = published;
    return { policy, version: policyVersion, uri: published.uri, format, ...(sha256 ? { sha256 } : {}) };
  };

  return {
    /** One policy's training step on its batch (the workflow runs one per trained policy, in parallel). */
    async update(input: UpdateInput): Promise<UpdateResult> {
      const t0 = Date.now();
      const { config, runId, policy, committed, batch } = input;
      if (batch.rows === 0) {
        return { policy, committed, applied: false, skipped: 'empty_batch', train: {}, seconds: 0 };
      }
      const trainer = trainerFor(config, policy);
      let waiting: 'train_step' | 'checkpoint' | 'publish' = 'train_step';
      let watch: StepWatch | undefined;
      return heartbeatWhile(
        { progress: () => ({ waiting, policy }), live: () => ({ ...watch?.counts() }) },
        async (signal) => {
          const request = trainStepRequest(input);
          const { heartbeatTimeoutMs } = Context.current().info;
          if (heartbeatTimeoutMs) {
            watch = watchStep(trainer, request.idempotencyKey, beatIntervalMs(heartbeatTimeoutMs), signal);
          }
          const response = await trainer
            .trainStep(request, signal)
            .catch(async (err: unknown) => {
              if (!isVersionConflict(err)) throw err;
              await restoreTo(trainer, runId, policy, committed, signal);
              return trainer.trainStep(request, signal);
            })
            .finally(() => {
              watch?.stop();
              watch = undefined;
            });
          recordTrainMetrics(config.recipe, policy, response.metrics);
          const version = response.policyVersion;
          waiting = 'checkpoint';
          const checkpointUri = config.training.checkpoint
            ? (
                await trainer.checkpoint(
                  policy,
                  { uri: deps.store.uri(checkpointPrefix(runId, policy, version)), version },
                  signal,
                )
              ).uri
            : undefined;
          waiting = 'publish';
          const snapshot =
            config.weightSync.engine === 'none'
              ? undefined
              : await publish(trainer, runId, policy, version, signal);
          return {
            policy,
            committed: {
              version,
              ...(checkpointUri ? { checkpointUri } : {}),
              ...(snapshot ? { snapshot } : {}),
            },
            // Applied by this attempt or by an earlier one whose answer was lost (the kernel then answers
            // `applied: false` with the first response's metrics): either way the step is in the weights and its
            // metrics are the manifest's.
            applied: true,
            train: flatTrainMetrics(response.metrics),
            seconds: (Date.now() - t0) / 1000,
          };
        },
      );
    },

    /**
     * Before an iteration samples: the policy's kernel is brought to the committed version (restored from the
     * committed checkpoint after a restart or preemption), and when inference servers need one, a snapshot of
     * that version is published (at version 0, the base weights). At version 0 with checkpoints on, the base
     * weights are checkpointed first (`baseCheckpointKey`; the kernel writes a checkpoint it holds once).
     * Returns the snapshot to sync, if any.
     */
    async prepareTrainer(input: PublishInput): Promise<WeightSnapshot | undefined> {
      const { config, policy, committed } = input;
      const trainer = trainerFor(config, policy);
      return heartbeatWhile(
        () => ({ waiting: 'prepare', policy }),
        async (signal) => {
          const state = await trainer.policyState(policy, signal);
          // Another run's weights at the same version number are not this run's: restore (or be refused).
          const othersWeights = typeof state.lineage === 'string' && state.lineage !== input.runId;
          if (state.policyVersion !== committed.version || othersWeights) {
            await restoreTo(trainer, input.runId, policy, committed, signal);
          } else if (committed.version === 0 && !committed.checkpointUri && config.training.checkpoint) {
            const uri = deps.store.uri(baseCheckpointKey(input.runId, policy));
            await trainer.checkpoint(policy, { uri, version: 0 }, signal);
          }
          if (config.weightSync.engine === 'none') return undefined;
          return committed.snapshot ?? publish(trainer, input.runId, policy, committed.version, signal);
        },
      );
    },
  };
}

/**
 * The kernel's request for the update's step: one per `(runId, iteration, policy)`, however often it is sent.
 * Also what a test's clean replay of a run's committed batches sends (test/support/kernel-replay.ts), so the
 * replay trains exactly as the run did.
 */
export function trainStepRequest(input: UpdateInput): TrainStepRequest {
  const { config, runId, iteration, policy, committed, batch } = input;
  return {
    idempotencyKey: `${runId}/iter-${iteration}/${policy}`,
    runId,
    iteration,
    policy,
    baseVersion: committed.version,
    batch: { uri: batch.uri, rows: batch.rows, sha256: batch.sha256 },
    loss: lossSpec(config.training.loss),
    optimizer: config.training.optimizer,
    ...updateSpec(config.training.update),
    // The kernel refuses rows sampled further back (staleness.py); inputs recorded before the pipeline
    // option have none, and were synchronous.
    maxStaleness: config.pipeline.maxStaleness,
  };
}

const isVersionConflict = (err: unknown): boolean =>
  err instanceof Error && (err as { type?: unknown }).type === NON_RETRYABLE.versionConflict;

/**
 * The step's metrics as the manifest keeps them, plain numbers: `entropyByRole` becomes `entropy.{role}`,
 * `stepsByRole` `steps.{role}`, `firstStepByRole` `firstStep.{role}`, `tokensByRole` `tokens.{role}` and
 * `gradNormByRole` `gradNorm.{role}`.
 */
export function flatTrainMetrics(metrics: TrainStepMetrics): Record<string, number> {
  const { entropyByRole, stepsByRole, firstStepByRole, tokensByRole, gradNormByRole, ...scalars } = metrics;
  const prefixed = (prefix: string, byRole: Record<string, number> = {}) =>
    Object.entries(byRole).map(([role, value]) => [`${prefix}.${role}`, value] as const);
  return {
    ...scalars,
    ...Object.fromEntries([
      ...prefixed('entropy', entropyByRole),
      ...prefixed('steps', stepsByRole),
      ...prefixed('firstStep', firstStepByRole),
      ...prefixed('tokens', tokensByRole),
      ...prefixed('gradNorm', gradNormByRole),
    ]),
  };
}

/**
 * The request's `update`, only when it asks for more than one step over the whole batch, so a kernel from
 * before mini-batches still takes every other run's steps.
 */
export function updateSpec(update: RunConfig['training']['update']): { update?: UpdateSpec } {
  const { miniBatchPrompts, epochs, roleOrder } = update;
  const all = miniBatchPrompts === 'all';
  if (all && epochs === 1 && roleOrder.length === 0) return {};
  return { update: { ...(all ? {} : { miniBatchPrompts }), epochs, roleOrder: [...roleOrder] } };
}

/**
 * The loss as the trainer contract takes it: each option only when it is on (see LossSpec), so a kernel from
 * before an option still takes every run's steps that leave it off.
 */
export function lossSpec(config: RunConfig['training']['loss']): LossSpec {
  const { entropyCoef, dualClip, k3Clamp, offPolicy, importanceCap, ...loss } = config;
  return {
    ...loss,
    ...(entropyCoef > 0 ? { entropyCoef } : {}),
    ...(dualClip !== 'off' ? { dualClip } : {}),
    ...(k3Clamp !== 'off' ? { k3Clamp } : {}),
    ...(offPolicy === 'tis' ? { offPolicy, importanceCap } : {}),
  };
}
