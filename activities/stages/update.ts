import { Context } from '@temporalio/activity';
import type { UpdateInput, UpdateResult } from '../../workflows/contracts';
import type { ActivityDeps } from './deps';
import { TrainerClient } from '../clients/trainer';
import { MissingSetting, trainerUrlFor } from '../../config/env';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';

/**
 * One training step on the batch, by reference, under the idempotency key `(runId, iteration, policy)`:
 * however often this activity is retried, the kernel applies the step once. Trainer pool.
 */
export function updateActivities(deps: ActivityDeps) {
  return {
    async update(input: UpdateInput): Promise<UpdateResult> {
      const t0 = Date.now();
      const { config } = input;
      if (input.rows === 0) {
        return {
          policyVersion: input.policyVersion,
          applied: false,
          skipped: 'empty_batch',
          train: {},
          seconds: 0,
        };
      }
      let url: string;
      try {
        url = trainerUrlFor(config, deps.env);
      } catch (err) {
        if (err instanceof MissingSetting) throw nonRetryable(NON_RETRYABLE.invalidConfig, err.message);
        throw err;
      }
      const trainer = new TrainerClient(url, {
        timeoutMs: config.timeouts.trainStepMinutes * 60_000,
        maxRetries: config.inference.maxRetries,
      });
      const ctx = Context.current();
      // The step can take minutes; heartbeat while it runs so a dead worker is noticed, a live one is not.
      const beat = setInterval(
        () => ctx.heartbeat({ waiting: 'train_step' }),
        Math.max(1000, (config.timeouts.heartbeatSeconds * 1000) / 3),
      );
      try {
        const response = await trainer.trainStep(
          {
            idempotencyKey: `${input.runId}/iter-${input.iteration}/${config.training.policy}`,
            runId: input.runId,
            iteration: input.iteration,
            policy: config.training.policy,
            baseVersion: input.policyVersion,
            batch: { uri: input.batchUri, rows: input.rows, sha256: input.sha256 },
            loss: config.training.loss,
            optimizer: config.training.optimizer,
          },
          ctx.cancellationSignal,
        );
        return {
          policyVersion: response.policyVersion,
          applied: response.applied,
          train: { ...response.metrics },
          seconds: (Date.now() - t0) / 1000,
        };
      } finally {
        clearInterval(beat);
      }
    },
  };
}
