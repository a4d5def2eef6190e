import { z } from 'zod';
import type {
  ChatMessage,
  LossSpec,
  OptimizerSpec,
  UpdateSpec,
  TrainingRow,
  TrainStepRequest,
  TrainStepResponse,
} from '../../../activities/clients/trainer-contract';

/**
 * The trainer contract (activities/clients/trainer-contract.ts) as strict zod schemas: unknown fields are
 * errors, so a client that drifts from the contract fails here, in tests, rather than against a real kernel.
 * Each schema is typed by its interface, so the two cannot disagree about a field's type.
 */

const finite = z.number();
const nonNegativeInt = z.number().int().min(0);

const lossSchema: z.ZodType<LossSpec> = z.strictObject({
  type: z.enum(['ppo_clip', 'reinforce']),
  normalization: z.enum(['dr_grpo', 'token_mean', 'sequence_mean']),
  normalizerConstant: z.number().positive(),
  clipLow: z.number().min(0),
  clipHigh: z.number().min(0),
  klCoef: z.number().min(0),
  entropyCoef: z.number().positive().optional(),
  dualClip: z.number().gt(1).optional(),
  k3Clamp: z.number().positive().optional(),
  offPolicy: z.enum(['ppo_ratio', 'tis']).optional(),
  importanceCap: z.number().min(1).optional(),
});

const optimizerSchema: z.ZodType<OptimizerSpec> = z.strictObject({
  learningRate: z.number().positive(),
  schedule: z.enum(['constant', 'warmup_constant']),
  warmupSteps: nonNegativeInt,
  maxGradNorm: z.number().positive(),
  weightDecay: z.number().min(0),
});

const updateSchema: z.ZodType<UpdateSpec> = z.strictObject({
  miniBatchPrompts: z.number().int().positive().optional(),
  epochs: z.number().int().positive(),
  roleOrder: z.array(z.string().min(1)),
});

export const trainStepRequestSchema: z.ZodType<TrainStepRequest> = z.strictObject({
  idempotencyKey: z.string().min(1),
  runId: z.string().min(1),
  iteration: nonNegativeInt,
  policy: z.string().min(1),
  baseVersion: nonNegativeInt,
  batch: z.strictObject({
    uri: z.string().min(1),
    rows: z.number().int().min(1),
    sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits'),
  }),
  loss: lossSchema,
  optimizer: optimizerSchema,
  update: updateSchema.optional(),
});

const messageSchema: z.ZodType<ChatMessage> = z.strictObject({
  role: z.enum(['system', 'user', 'assistant']),
  content: z.string(),
});

export const trainingRowSchema: z.ZodType<TrainingRow> = z
  .strictObject({
    messages: z.array(messageSchema).min(1),
    completion: z.string(),
    role: z.string().min(1),
    group: z.string().min(1),
    reward: finite,
    advantage: finite,
    behaviourLogprobs: z.array(z.number().max(0)).optional(),
    lossMaskSpans: z.array(z.tuple([nonNegativeInt, nonNegativeInt])).optional(),
    completionTokens: z
      .array(
        z.union([
          z.strictObject({ ids: z.array(nonNegativeInt).min(1) }),
          z.strictObject({ text: z.string().min(1) }),
        ]),
      )
      .min(1)
      .optional(),
    // Both left out at 1, the kernel's default, so a kernel from before them takes a run sampled at 1.
    temperature: z
      .number()
      .positive()
      .refine((t) => t !== 1, 'left out at 1')
      .optional(),
    topP: z.number().gt(0).lt(1).optional(),
  })
  .superRefine((row, ctx) => {
    row.lossMaskSpans?.forEach(([start, end], i) => {
      if (start > end || end > row.completion.length) {
        ctx.addIssue({
          code: 'custom',
          path: ['lossMaskSpans', i],
          message: `span [${start}, ${end}) is not inside the completion (${row.completion.length} chars)`,
        });
      }
    });
  });

const metricsSchema = z.strictObject({
  loss: finite,
  kl: finite,
  clipFraction: finite,
  gradNorm: finite,
  tokens: finite,
  seconds: finite,
  entropy: finite.optional(),
  entropyByRole: z.record(z.string(), finite).optional(),
  optimizerSteps: nonNegativeInt.optional(),
  skippedSteps: nonNegativeInt.optional(),
  dualClipFraction: finite.optional(),
  importanceWeightMean: finite.optional(),
  importanceWeightMax: finite.optional(),
  importanceWeightTruncatedFraction: finite.optional(),
  rowsRetokenized: nonNegativeInt.optional(),
  tokenExactFraction: finite.optional(),
});

export const trainStepResponseSchema: z.ZodType<TrainStepResponse> = z.strictObject({
  idempotencyKey: z.string(),
  applied: z.boolean(),
  policyVersion: nonNegativeInt,
  metrics: metricsSchema,
});

/**
 * A checkpoint's `state.json`: the version and, as the kernel's, the first responses to the keys applied up to
 * it (a restore forgets the later ones).
 */
export const checkpointSchema = z.looseObject({
  policyVersion: nonNegativeInt,
  responses: z.record(z.string(), trainStepResponseSchema).default({}),
});
