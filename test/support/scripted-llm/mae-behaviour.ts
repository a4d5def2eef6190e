import type { Rng } from '../../../activities/lib/rng';
import { sampleRng, userText, type CallBehaviour, type CompletionContext } from './completion';
import { MAE_CALLS } from '../../../activities/clients/llm-protocol';
import { ANSWER_TYPES } from './config';
import { composeProblem, passRateOf, recogniseTask } from './problems';

/**
 * What the scripted model writes for MAE's calls (spec mae.md §4), as pure functions of the prompt, the
 * request seed and the choice index, so a restarted server answers the same:
 * - proposer: a `Problem <id>: …` task (built on the reference's numbers when there is one) in one
 *   `<question>` block;
 * - solver: the task's gold answer with probability passRate(task) (seed questions it did not write get a
 *   guess), in one `<answer>` block;
 * - judge: `<think>…</think><score>X</score>`, X from the prompt: 8–10 for a gold answer and 1–3 for a wrong
 *   one, 5–10 for a question it wrote, anything 1–10 for text it cannot check; sometimes as a fraction X/10.
 * `invalidTaskRate` is the rate of format errors in every role: no tag, several tags, the template's
 * placeholder left as the question, a score that is not a number. The judge calls also take the
 * `garbageContent` fault, which makes a judgement prose without any score.
 */

/** The part of the prompt between two markers (the whole text when they are missing). */
const between = (text: string, pattern: RegExp): string => pattern.exec(text)?.[1] ?? text;

function formatError<T extends string>(ctx: CompletionContext, rng: Rng, kinds: readonly T[]): T | undefined {
  return rng.next() < ctx.settings.invalidTaskRate ? rng.pick(kinds) : undefined;
}

function propose(ctx: CompletionContext): string {
  const text = userText(ctx);
  const reference = /### Reference Questions:\n([\s\S]*?)\n### Reference Questions Ends Here/.exec(text)?.[1];
  const rng = sampleRng(ctx, 'mae-proposer', reference ?? 'no-reference');
  const { statement } = composeProblem(rng.pick(ANSWER_TYPES), rng, reference ?? '');
  const thinking = reference
    ? 'I keep the reference task type, change its numbers and add a step.'
    : 'A multi-step calculation is self-contained and has one checkable answer.';
  switch (formatError(ctx, rng, ['no_tags', 'several', 'placeholder'] as const)) {
    case 'no_tags':
      return `${thinking}\n\nMy task: ${statement}`;
    case 'several':
      return `${thinking}\n\n<question>\nDraft: ${statement}\n</question>\n<question>\n${statement}\n</question>`;
    case 'placeholder':
      return `${thinking}\n\n<question>\n[Your generated question here]\n</question>`;
    case undefined:
      return `${thinking}\n\n<question>\n${statement}\n</question>`;
  }
}

function solve(ctx: CompletionContext): string {
  const question = between(userText(ctx), /### Task:\n([\s\S]*)$/);
  const task = recogniseTask(question);
  const rng = sampleRng(ctx, 'mae-solver', question);
  const answer = !task
    ? `option ${1 + rng.int(4)}`
    : rng.next() < passRateOf(task.statement, ctx.settings.passRate)
      ? task.gold
      : task.wrong(rng);
  const working = 'Let me work through this step by step, checking each constraint.';
  switch (formatError(ctx, rng, ['no_tags', 'several'] as const)) {
    case 'no_tags':
      return `${working}\nThe final answer is ${answer}.`;
    case 'several':
      return `${working}\n<answer>${answer}</answer>\nTo be sure, once more:\n<answer>${answer}</answer>`;
    case undefined:
      return `${working}\n<answer>${answer}</answer>`;
  }
}

/** A judgement with score x, or one of the judge's format errors. */
function judgement(ctx: CompletionContext, rng: Rng, analysis: string, x: number): string {
  const think = `<think>\n${analysis}\n</think>\n`;
  switch (formatError(ctx, rng, ['no_tag', 'unparsable', 'several'] as const)) {
    case 'no_tag':
      return `${think}Overall I would give it a ${x >= 8 ? 'high' : 'low'} mark.`;
    case 'unparsable':
      return `${think}<score>${x >= 8 ? 'excellent' : 'poor'}</score>`;
    case 'several':
      return `${think}<score>${x}</score>\nOn reflection: <score>${11 - x}</score>`;
    case undefined:
      return `${think}<score>${rng.next() < 0.2 ? `${x}/10` : x}</score>`;
  }
}

function judgeAnswer(ctx: CompletionContext): string {
  const m = /Question\/Problem: ([\s\S]*?)\nGenerated Solution: ([\s\S]*?)\nFirst, analyze the solution/.exec(
    userText(ctx),
  );
  const [question, solution] = [m?.[1] ?? '', (m?.[2] ?? '').trim()];
  const task = recogniseTask(question);
  const rng = sampleRng(ctx, 'mae-judge-answer', question, solution);
  if (!task) return judgement(ctx, rng, 'I cannot verify every step of this solution.', 1 + rng.int(10));
  return solution === task.gold
    ? judgement(ctx, rng, 'Every step checks out and the result is correct.', 8 + rng.int(3))
    : judgement(ctx, rng, 'The result is wrong: a calculation error.', 1 + rng.int(3));
}

function judgeQuestion(ctx: CompletionContext): string {
  const question = between(userText(ctx), /\nQuestion: ([\s\S]*?)\nFirst, analyze the question/);
  const rng = sampleRng(ctx, 'mae-judge-question', question);
  return recogniseTask(question)
    ? judgement(ctx, rng, 'Clear, self-contained and solvable.', 5 + rng.int(6))
    : judgement(ctx, rng, 'I am not sure this question is well posed.', 1 + rng.int(10));
}

const scorelessProse: CallBehaviour['fault'] = {
  kind: 'garbageContent',
  write: () => 'The work looks careful overall and I would rate it fairly highly.',
};

export const MAE_BEHAVIOURS: Readonly<Record<string, CallBehaviour>> = {
  [MAE_CALLS.proposer]: { answer: propose },
  [MAE_CALLS.solver]: { answer: solve },
  [MAE_CALLS.judgeAnswer]: { answer: judgeAnswer, fault: scorelessProse },
  [MAE_CALLS.judgeQuestion]: { answer: judgeQuestion, fault: scorelessProse },
};
