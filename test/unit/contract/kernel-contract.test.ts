import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  GENERATED_FILE,
  readSchema,
  renderKernelContract,
  type SchemaDocument,
} from '../../../infra/codegen/kernel-contract';
import {
  lossSpecSchema,
  trainProgressSchema,
  trainStepRequestSchema,
} from '../../../activities/clients/kernel-api.generated';

const ROOT = path.resolve(__dirname, '../../..');

const REQUEST = {
  idempotencyKey: 'run-1/iter-0/policy',
  runId: 'run-1',
  iteration: 0,
  policy: 'policy',
  baseVersion: 0,
  batch: { uri: 'file:///tmp/b.jsonl', rows: 1, sha256: '0'.repeat(64) },
  loss: {
    type: 'ppo_clip',
    normalization: 'dr_grpo',
    normalizerConstant: 512,
    clipLow: 0.2,
    clipHigh: 0.28,
    klCoef: 0,
  },
  optimizer: { learningRate: 0, schedule: 'constant', warmupSteps: 0, maxGradNorm: 1, weightDecay: 0 },
};

describe('the kernel contract (activities/clients/kernel-api.generated.ts)', () => {
  it('is what `npm run gen:kernel-contract` generates from contracts/kernel-api.schema.json (run it after changing the kernel models)', () => {
    const generated = renderKernelContract(readSchema(ROOT));
    expect(readFileSync(path.join(ROOT, GENERATED_FILE), 'utf8')).toBe(generated);
  });

  it("validates as the kernel's models do: bounds, closed objects, nullable and optional fields", () => {
    // A learning rate of 0 is the kernel's negative control, not a mistake.
    expect(trainStepRequestSchema.safeParse(REQUEST).success).toBe(true);
    expect(trainStepRequestSchema.safeParse({ ...REQUEST, update: null }).success).toBe(true);
    const refused = [
      { ...REQUEST, extra: 1 },
      { ...REQUEST, iteration: -1 },
      { ...REQUEST, batch: { ...REQUEST.batch, sha256: 'A'.repeat(64) } },
      { ...REQUEST, loss: { ...REQUEST.loss, dualClip: 1 } },
      { ...REQUEST, update: { epochs: 101 } },
    ];
    for (const body of refused) expect(trainStepRequestSchema.safeParse(body).success).toBe(false);
    expect(lossSpecSchema.safeParse({ ...REQUEST.loss, offPolicy: 'tis', importanceCap: 0.5 }).success).toBe(
      false,
    );
    expect(trainProgressSchema.safeParse({ object: 'train.progress', policy: 'p', step: null }).success).toBe(
      true,
    );
    expect(trainProgressSchema.safeParse({ policy: 'p', step: null }).success).toBe(false);
  });

  it('refuses a schema keyword it does not understand, naming the model and the field', () => {
    const doc: SchemaDocument = {
      $defs: {
        Odd: { type: 'object', properties: { when: { type: 'string', format: 'date-time' } as never } },
      },
    };
    expect(() => renderKernelContract(doc)).toThrow(/Odd\.when: the keyword format is not understood/);
  });

  it('declares each model after the models its validator uses', () => {
    const doc: SchemaDocument = {
      $defs: {
        A: {
          type: 'object',
          properties: { b: { $ref: '#/$defs/B' } },
          required: ['b'],
          additionalProperties: false,
        },
        B: {
          type: 'object',
          properties: { n: { type: 'integer', minimum: 0 } },
          additionalProperties: false,
        },
      },
    };
    const text = renderKernelContract(doc);
    expect(text.indexOf('export const bSchema')).toBeLessThan(text.indexOf('export const aSchema'));
    expect(text).toContain('  b: bSchema,');
    expect(text).toContain('  n: z.number().int().min(0).optional(),');
    expect(text).toContain('  n?: number;');
  });
});
