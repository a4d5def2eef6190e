import { EVAL_CALLS } from '../../../activities/clients/llm-protocol';
import { seededRng } from '../../../activities/lib/rng';
import { sampleRng, userText, type CallBehaviour, type CompletionContext } from './completion';
import { recogniseTask } from './problems';

/**
 * Held-out evaluation answers whose correctness depends on the policy version being sampled, so a test can
 * make a lineage's new checkpoint better or worse than its promoted one. The questions are the server's own
 * `Problem <id>: ...` statements (their gold is recomputed from the text). A greedy answer (temperature 0)
 * is one draw per question; a sampled one draws per question, request seed and choice, so the n samples of
 * a question differ (pass@k, maj@k). Either way the draw does not depend on the version, so raising the
 * skill only ever turns wrong answers into right ones.
 */

/** The version in a model name such as `scripted-policy-v3`; 0 for an unversioned name. */
export function versionOfModel(model: string | undefined): number {
  const match = /-v(\d+)$/.exec(model ?? '');
  return match ? Number(match[1]) : 0;
}

function answerEval(ctx: CompletionContext): string {
  const task = recogniseTask(userText(ctx));
  if (!task) return 'I do not recognise this question.';
  const { base, perVersion } = ctx.settings.evalSkill;
  const skill = Math.min(1, Math.max(0, base + perVersion * versionOfModel(ctx.model)));
  const rng =
    ctx.temperature === 0 ? seededRng('eval', task.statement) : sampleRng(ctx, 'eval', task.statement);
  const answer = rng.next() < skill ? task.gold : task.wrong(rng);
  return `Working through it step by step.\n\nThe final answer is \\boxed{${answer}}.`;
}

export const EVAL_BEHAVIOURS: Readonly<Record<string, CallBehaviour>> = {
  [EVAL_CALLS.answer]: { answer: answerEval },
};
