import { z } from 'zod';
import {
  trainingRowSchema as contractRowSchema,
  trainStepRequestSchema as contractRequestSchema,
  trainStepResponseSchema,
} from '../../../activities/clients/kernel-api.generated';

/**
 * What the fake checks of a request and a batch: the kernel's contract, with the validators generated from the
 * kernel's own models (activities/clients/kernel-api.generated.ts: strict, so a client that drifts from the
 * contract fails here, in tests, rather than against a real kernel), and on top of it what the kernel checks in
 * code rather than in its schema, and what our client promises beyond the contract.
 */

export {
  checkpointRequestSchema,
  publishRequestSchema,
  restoreRequestSchema,
  trainStepResponseSchema,
} from '../../../activities/clients/kernel-api.generated';

/** Our client leaves the entropy term out at 0, so a kernel from before the field still takes its steps. */
export const trainStepRequestSchema = contractRequestSchema.superRefine((request, ctx) => {
  if (request.loss.entropyCoef === 0) {
    ctx.addIssue({ code: 'custom', path: ['loss', 'entropyCoef'], message: 'left out at 0' });
  }
});

export const trainingRowSchema = contractRowSchema.superRefine((row, ctx) => {
  // The kernel's TrainingRow checks this in a validator of its own, which JSON Schema cannot state.
  const chars = [...row.completion].length; // code points, as the kernel counts
  row.lossMaskSpans?.forEach(([start, end], i) => {
    if (start > end || end > chars) {
      ctx.addIssue({
        code: 'custom',
        path: ['lossMaskSpans', i],
        message: `span [${start}, ${end}) is not inside the completion (${chars} chars)`,
      });
    }
  });
  // Our client leaves both out at 1, the kernel's default, so a kernel from before them takes a run sampled at 1.
  for (const field of ['temperature', 'topP'] as const) {
    if (row[field] === 1) ctx.addIssue({ code: 'custom', path: [field], message: 'left out at 1' });
  }
});

/**
 * A checkpoint's `state.json`: the version and, as the kernel's, the first responses to the keys applied up to
 * it (a restore forgets the later ones).
 */
export const checkpointSchema = z.looseObject({
  policyVersion: z.number().int().min(0),
  responses: z.record(z.string(), trainStepResponseSchema).default({}),
});
