import type { TrainingRow } from '../../activities/clients/trainer-contract';
import { buildScriptedModel } from '../support/kernel-process';
import { withKernelRun } from '../support/kernel-run';
import {
  committedInOrder,
  expectKernelAt,
  expectPipeline,
  expectTrainedExactly,
  versionsOf,
} from '../support/kernel-manifests';

const ITERATIONS = 3;

/**
 * MAE and SPELL end to end on real training kernels, synchronous (`pipeline.maxStaleness` 0) and one-step-off
 * (1): every role samples from a kernel, every iteration filters, trains on the kernel and commits in order,
 * and with k = 1 iteration n+1 samples from a pinned snapshot while the kernel trains iteration n.
 *
 * A random tiny model writes no `<question>`, no JSON and no verdict, so no reward would differ and SPELL would
 * train nothing. The models are the tiny one rewritten into seeded bigram chains (test/support/scripted_model.py)
 * whose every output is one added token and the end of the message, drawn with set probabilities at the start of
 * each message: rollouts of one prompt differ, earn different rewards, and each role has rows.
 */

/**
 * A model whose every message is one of `outputs` (a single added token each, then the end), drawn by weight.
 * The end is never one of them: EOS follows every output, and a target of several chain sources does not get
 * the weight the chain gives it (the sources' directions are not orthogonal in the tiny model's 64 dimensions).
 */
function oneTokenOutputs(outputs: Record<string, number>): string {
  const texts = Object.keys(outputs);
  const chain: Record<string, Record<string, number>> = { '\n': outputs };
  for (const text of texts) chain[text] = { EOS: 1 };
  return buildScriptedModel({ tokens: texts, chain });
}

/** MAE's one policy proposes, answers and judges, so its one message start draws from all four outputs. */
const MAE_OUTPUTS = {
  question: '<question>Which number is both prime and even?</question>',
  answer: '<answer>2</answer>',
  /** X = 8 maps to 7/9 ≥ 0.7: a question it scores enters the pool D; an answer earns V_J = 0.78. */
  high: '<score>8</score>',
  low: '<score>2</score>',
};

/**
 * SPELL's roles as three policies, each on a kernel of its own, so each writes its own kind of output: the
 * questioner a financial-math question (or, one time in six, nothing: a bad-format negative), the responder
 * the reference answer 7 or a wrong 3 (the no-document probe answering 7 makes the question ungrounded), the
 * verifier [[YES]] or [[NO]] evenly (with G = 3, exactly two of three agreeing makes a trainable verifier group).
 */
const SPELL_OUTPUTS = {
  questioner: '{"question": "What were the revenues of both companies in million dollars?", "answer": "7"}',
  noJson: 'No question fits these documents.',
  right: 'The answer is 7',
  wrong: 'The answer is 3',
  yes: '[[YES]]',
  no: '[[NO]]',
};
const SPELL_ROLES = ['questioner', 'responder', 'verifier'] as const;

/** Each role's model, for the policy named `<runId>-<role>`. */
function spellModels(): (policy: string) => string {
  const models = {
    questioner: oneTokenOutputs({ [SPELL_OUTPUTS.questioner]: 5, [SPELL_OUTPUTS.noJson]: 1 }),
    responder: oneTokenOutputs({ [SPELL_OUTPUTS.right]: 1, [SPELL_OUTPUTS.wrong]: 2 }),
    verifier: oneTokenOutputs({ [SPELL_OUTPUTS.yes]: 1, [SPELL_OUTPUTS.no]: 1 }),
  };
  return (policy) => {
    const role = SPELL_ROLES.find((r) => policy.endsWith(`-${r}`));
    if (!role) throw new Error(`policy ${policy} names no SPELL role`);
    return models[role];
  };
}

describe('MAE and SPELL on the training kernel, synchronous and one-step-off', () => {
  let maeModel: string;
  let spellModel: (policy: string) => string;
  beforeAll(() => {
    maeModel = oneTokenOutputs(Object.fromEntries(Object.values(MAE_OUTPUTS).map((t) => [t, 1])));
    spellModel = spellModels();
  });

  test.each([0, 1])(
    'MAE with maxStaleness %i: proposer, solver and judge on one kernel',
    (k) =>
      withKernelRun(
        { model: maeModel, name: `kernel-mae-k${k}`, policies: (runId) => [runId] },
        async (run) => {
          const policy = run.runId;
          const outcome = await run.execute({
            ...run.baseConfig,
            recipe: 'mae',
            iterations: ITERATIONS,
            batchSize: 4,
            shardSize: 2,
            groupSize: 2,
            sampling: { temperature: 1, topP: 1, maxTokens: 8 },
            training: { policy },
            pipeline: { maxStaleness: k },
          });
          const manifests = await committedInOrder(run, outcome.lastCommitted, ITERATIONS);
          // One step per iteration: the proposer and the solver have a row for every unit.
          expect(versionsOf(manifests, policy)).toEqual([1, 2, 3]);
          expectPipeline(manifests, policy, k);

          const outputs = new Set(Object.values(MAE_OUTPUTS));
          for (const [i, manifest] of manifests.entries()) {
            const rows = await run.rows(i + 1, policy);
            const byRole = countRoles(rows);
            expect(byRole.proposer).toBe(4);
            expect(byRole.solver).toBe(4);
            // The Judge trains on pairs of P, which the first iteration fills: the plan reads the pools the
            // iteration's sampling started from, so with k = 1 iteration 2 (sampling beside 1) has none either.
            const withPairs = i + 1 > 1 + k;
            expect(byRole.judge ?? 0).toBe(withPairs ? 4 : 0);
            for (const row of rows) expect(outputs.has(row.completion)).toBe(true);
            // The chain's rollouts differ: some role's rewards, and so its advantages, are not all equal.
            expect(rows.some((r) => r.advantage !== 0)).toBe(true);
            expectTokenExact(rows);
            expectTrainedExactly(manifest, policy);
          }
          await expectKernelAt(run, policy, manifests, k);
        },
      ),
    600_000,
  );

  test.each([0, 1])(
    'SPELL with maxStaleness %i: questioner, responder and verifier on kernels of their own',
    (k) =>
      withKernelRun(
        {
          model: spellModel,
          name: `kernel-spell-k${k}`,
          policies: (runId) => SPELL_ROLES.map((role) => `${runId}-${role}`),
        },
        async (run) => {
          const policyOf = (role: string) => `${run.runId}-${role}`;
          const base = run.baseConfig as { inference: Record<string, unknown> };
          const outcome = await run.execute({
            ...base,
            recipe: 'spell',
            iterations: ITERATIONS,
            batchSize: 3,
            shardSize: 3,
            groupSize: 3,
            corpus: { uri: 'test/fixtures/corpus/clusters.jsonl', maxSegmentChars: 400 },
            sampling: { temperature: 1, topP: 1, maxTokens: 8 },
            spell: {
              taskWeights: { general_qa: 0, multiple_choice: 0, financial_math: 1 },
              // One solvable question is a full batch; rounds are planned until there is one.
              responderGroups: 1,
              maxRounds: 4,
              verifierRatio: 1,
            },
            inference: {
              ...base.inference,
              roles: Object.fromEntries(
                SPELL_ROLES.map((role) => [
                  role,
                  {
                    baseUrl: `${run.kernels[policyOf(role)]!.url}/v1`,
                    model: policyOf(role),
                    apiKeyEnv: 'SELFPLAY_KERNEL_TOKEN',
                  },
                ]),
              ),
            },
            training: {
              policies: Object.fromEntries(
                SPELL_ROLES.map((role) => [
                  policyOf(role),
                  { roles: [role], trainerUrl: run.kernels[policyOf(role)]!.url },
                ]),
              ),
            },
            pipeline: { maxStaleness: k },
          });
          const manifests = await committedInOrder(run, outcome.lastCommitted, ITERATIONS);
          const outputs = new Set(Object.values(SPELL_OUTPUTS));
          for (const role of SPELL_ROLES) {
            const policy = policyOf(role);
            const steps: number[] = [];
            for (const [i, manifest] of manifests.entries()) {
              const rows = await run.rows(i + 1, policy);
              expect(rows.every((r) => r.role === role && outputs.has(r.completion))).toBe(true);
              expectTokenExact(rows);
              if (rows.length > 0) {
                steps.push(i + 1);
                expectTrainedExactly(manifest, policy);
              }
            }
            // A policy steps exactly in the iterations that had rows for it (an empty batch keeps its weights).
            expect(versionsOf(manifests, policy)).toEqual(
              manifests.map((_, i) => steps.filter((s) => s <= i + 1).length),
            );
            expectPipeline(manifests, policy, k);
            await expectKernelAt(run, policy, manifests, k);
          }
          // Every iteration had a solvable question (its G responses and the questioner's row train), and the
          // verifier trained on groups whose majority agreed with the rule.
          for (const [i, manifest] of manifests.entries()) {
            expect(manifest.metrics.recipe.rowsByRole.responder).toBeGreaterThanOrEqual(3);
            expect(manifest.metrics.recipe.rowsByRole.questioner).toBeGreaterThanOrEqual(1);
            // A trained responder group is one whose G rewards differ: its advantages are not all zero.
            const responses = await run.rows(i + 1, policyOf('responder'));
            expect(responses.some((r) => r.advantage !== 0)).toBe(true);
          }
          expect(versionsOf(manifests, policyOf('questioner'))).toEqual([1, 2, 3]);
          expect(versionsOf(manifests, policyOf('responder'))).toEqual([1, 2, 3]);
          expect(outcome.versions[policyOf('verifier')]).toBeGreaterThan(0);
        },
      ),
    600_000,
  );
});

/**
 * Token in, token out: every row carries the ids its kernel sampled (one message, no inserted text) and one
 * behaviour log-probability per id.
 */
function expectTokenExact(rows: readonly TrainingRow[]): void {
  for (const row of rows) {
    const segments = row.completionTokens ?? [];
    expect(segments.length).toBe(1);
    const ids = segments.flatMap((s) => ('ids' in s ? s.ids : []));
    expect(ids.length).toBeGreaterThan(0);
    expect(row.behaviourLogprobs).toHaveLength(ids.length);
  }
}

const countRoles = (rows: readonly TrainingRow[]): Record<string, number> =>
  rows.reduce<Record<string, number>>((acc, r) => ({ ...acc, [r.role]: (acc[r.role] ?? 0) + 1 }), {});
