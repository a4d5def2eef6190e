import { MAE_CALLS } from '../../../activities/clients/llm-protocol';
import { BEHAVIOURS } from '../../support/scripted-llm/behaviour';
import type { CompletionContext } from '../../support/scripted-llm/completion';
import { DEFAULT_CONFIG } from '../../support/scripted-llm/config';
import { recogniseTask } from '../../support/scripted-llm/problems';
import type { ChatMessage } from '../../../activities/clients/trainer-contract';
import {
  judgeAnswerMessages,
  judgeQuestionMessages,
  proposerMessages,
  solverMessages,
} from '../../../activities/recipes/mae/prompts';
import { answerForJudge, extractQuestion } from '../../../activities/recipes/mae/parse';
import { parseScore } from '../../../activities/judges/score';
import { formatReward } from '../../../activities/scoring/tags';

const write = (call: string, messages: ChatMessage[], seed: number, settings = DEFAULT_CONFIG): string => {
  const behaviour = BEHAVIOURS[call];
  if (!behaviour) throw new Error(`no behaviour for ${call}`);
  const ctx: CompletionContext = { messages, seed, temperature: 1, index: 0, settings };
  return behaviour.answer(ctx);
};
const SEEDS = Array.from({ length: 200 }, (_, i) => i);
const clean = { ...DEFAULT_CONFIG, invalidTaskRate: 0 };

describe('scripted MAE behaviours', () => {
  test('deterministic in prompt and seed', () => {
    const messages = proposerMessages('What is 3 + 4?');
    expect(write(MAE_CALLS.proposer, messages, 7)).toBe(write(MAE_CALLS.proposer, messages, 7));
    expect(new Set(SEEDS.map((s) => write(MAE_CALLS.proposer, messages, s))).size).toBeGreaterThan(150);
  });

  test('the proposer writes one question that the recipe extracts, and format errors at invalidTaskRate', () => {
    const outputs = SEEDS.map((s) =>
      write(
        MAE_CALLS.proposer,
        proposerMessages(s % 2 ? undefined : 'Problem 0000abcd: compute 12 + 3 * 4.'),
        s,
      ),
    );
    const formats = outputs.map((o) => formatReward(o, 'question'));
    const extracted = outputs.map(extractQuestion);
    // About 20% format errors (the default rate), of three kinds.
    const errors =
      formats.filter((f) => f !== 1).length +
      extracted.filter((e) => !e.ok && e.reason === 'placeholder').length;
    expect(errors).toBeGreaterThan(20);
    expect(errors).toBeLessThan(70);
    expect(formats).toContain(0.5);
    expect(formats).toContain(0);
    expect(extracted.filter((e) => !e.ok).map((e) => !e.ok && e.reason)).toEqual(
      expect.arrayContaining(['no_question', 'placeholder']),
    );
    const cleanOutputs = SEEDS.map((s) => write(MAE_CALLS.proposer, proposerMessages(undefined), s, clean));
    expect(cleanOutputs.every((o) => formatReward(o, 'question') === 1)).toBe(true);
  });

  test('solver answers its own tasks at the task’s pass rate, and the judge scores gold high and wrong low', () => {
    const question = extractQuestion(write(MAE_CALLS.proposer, proposerMessages(undefined), 3, clean));
    if (!question.ok) throw new Error('expected a question');
    const task = recogniseTask(question.question);
    expect(task).toBeDefined();
    const answers = SEEDS.map((s) =>
      answerForJudge(write(MAE_CALLS.solver, solverMessages(question.question), s, clean)),
    );
    const correct = answers.filter((a) => a === task?.gold);
    expect(correct.length).toBeGreaterThan(0);
    for (const [i, answer] of answers.slice(0, 40).entries()) {
      const parsed = parseScore(
        write(MAE_CALLS.judgeAnswer, judgeAnswerMessages(question.question, answer), i, clean),
      );
      if (!parsed.ok) throw new Error('expected a score');
      if (answer === task?.gold) expect(parsed.x).toBeGreaterThanOrEqual(8);
      else expect(parsed.x).toBeLessThanOrEqual(3);
    }
  });

  test('the judge writes <think> then <score>, sometimes a fraction, sometimes malformed', () => {
    const outputs = SEEDS.map((s) =>
      write(MAE_CALLS.judgeQuestion, judgeQuestionMessages('Which is larger, 2^10 or 10^3?'), s),
    );
    const parsed = outputs.map(parseScore);
    expect(outputs.every((o) => o.startsWith('<think>\n'))).toBe(true);
    expect(parsed.filter((p) => !p.ok).map((p) => !p.ok && p.reason)).toEqual(
      expect.arrayContaining(['no_score_tag', 'unparsable_score']),
    );
    expect(outputs.some((o) => /<score>\d+\/10<\/score>/.test(o))).toBe(true);
    expect(outputs.some((o) => formatReward(o, 'score') === 0.5)).toBe(true);
    const xs = parsed.flatMap((p) => (p.ok ? [p.x] : []));
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(1);
    expect(Math.max(...xs)).toBeLessThanOrEqual(10);
  });

  test('the judge calls take the garbageContent fault: prose without a score', () => {
    const fault = BEHAVIOURS[MAE_CALLS.judgeAnswer]?.fault;
    expect(fault?.kind).toBe('garbageContent');
    expect(BEHAVIOURS[MAE_CALLS.judgeQuestion]?.fault?.kind).toBe('garbageContent');
    const text =
      fault?.write({ messages: [], seed: 1, temperature: 1, index: 0, settings: DEFAULT_CONFIG }) ?? '';
    expect(parseScore(text)).toEqual({ ok: false, reason: 'no_score_tag' });
  });
});
