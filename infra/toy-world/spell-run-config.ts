/**
 * The SPELL run the toy world's SPELL variant is made for (spell-world.ts): the paper's recipe, rewards,
 * verifier and role-specific sampling, sampled at its T = 0.7 and top-p 0.95, sized for a CPU. What differs
 * from the preset and why:
 * - B = 16 clusters, G = 8, N = 16 responder groups and one round, so an iteration takes seconds;
 * - financial math only (the world's clusters state counts; SPELL's numeric rule check);
 * - the questioner sees one sheet of a cluster (m = 1, drawn at random; the responder sees both) and no
 *   history (L = 0): its question and answer are then copies from fixed places (spell-world.ts,
 *   `questionerCompletion`), where with both sheets its reference was mostly wrong; a cluster has no further
 *   documents to widen the context with, and the with-history template was never warm-started;
 * - verifier groups at half the responder groups (not 1/8): about five per step, so the verifier's RL moves
 *   its agreement within a CI-sized run;
 * - generations of at most 24 tokens (the roles' completions are 4 to 8);
 * - a learning rate for a model of about 0.4 M parameters trained from scratch, not 2e-6;
 * - held-out accuracy: the responder's, asked with SPELL's responder prompt over unseen clusters (the held-out
 *   file's question is the whole prompt) at the run's T = 0.7 and top-p 0.95, its answer read after "the
 *   answer is" as SPELL's parser reads it.
 */
import { cpuSizedRun, heldOutEvaluation, TOY_WORLD_POLICY } from './run-config';

export function spellWorldRunConfig(
  world: { corpus: string; heldOut: string },
  seed = 0,
): Record<string, unknown> {
  const sampling = { temperature: 0.7, topP: 0.95 };
  return {
    ...cpuSizedRun('spell', world.corpus, seed),
    sampling: { ...sampling, maxTokens: 24 },
    spell: {
      historySize: 0,
      newDocuments: 1,
      taskWeights: { general_qa: 0, multiple_choice: 0, financial_math: 1 },
      responderGroups: 16,
      maxRounds: 1,
      verifierRatio: 0.5,
    },
    training: {
      policy: TOY_WORLD_POLICY,
      optimizer: { learningRate: 3e-4, maxGradNorm: 1.0 },
    },
    weightSync: { engine: 'kernel' },
    inference: { requestTimeoutSeconds: 300 },
    evaluation: {
      ...heldOutEvaluation(world.heldOut, seed, 24),
      ...sampling,
      template: { user: '{question}' },
      answerFormat: 'answer_is',
    },
  };
}
