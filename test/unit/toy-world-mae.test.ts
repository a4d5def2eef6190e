import { parseScore } from '../../activities/judges/score';
import { answerForJudge, extractQuestion } from '../../activities/recipes/mae/parse';
import {
  judgeAnswerMessages,
  judgeQuestionMessages,
  proposerMessages,
  solverMessages,
} from '../../activities/recipes/mae/prompts';
import { extractLastBoxed } from '../../activities/scoring/boxed';
import { MAE_EVAL_TEMPLATE } from '../../infra/toy-world/mae-run-config';
import {
  answerOf,
  excludedQuestions,
  isRightAnswer,
  judgeAnswerCompletion,
  JUDGE_SLIP_RATE,
  MAE_SLIP_RATE,
  maeValidationExamples,
  maeWarmStartExamples,
  PASS_SCORE,
  seedQuestions,
} from '../../infra/toy-world/mae-world';
import { heldOut, isHeldOutFact, RUNGS, rungOf } from '../../infra/toy-world/world';

/**
 * MAE's toy world (infra/toy-world/mae-world.ts): nothing the model trains on or D can hold names a held-out
 * fact, every example is MAE's own prompt and parses with MAE's own parsers, and the teachers slip at their
 * rates.
 */
describe("MAE's toy world", () => {
  const examples = maeWarmStartExamples(0, 2000);
  const question = (text: string): string => /### Task:\n([\s\S]*)$/.exec(text)?.[1] ?? '';
  const judged = (text: string): { question: string; shown: string } => {
    const m = /Question\/Problem: ([\s\S]*?)\nGenerated Solution: ([\s\S]*?)\nFirst, analyze/.exec(text);
    return { question: m?.[1] ?? '', shown: m?.[2] ?? '' };
  };
  const factOf = (q: string): [number, number] => {
    const m = /What is (\d+) ([+-]) (\d+)\?/.exec(q);
    if (!m) throw new Error(`not a world question: ${q}`);
    const [a, b] = [Number(m[1]), Number(m[3])];
    return m[2] === '+' ? [a, b] : [a - b, b];
  };

  test('no seed, warm-start or validation example names a held-out fact; D can hold none', () => {
    const texts = [
      ...seedQuestions(0, 64).map((s) => s.question),
      ...examples.map((e) => [...e.messages.map((m) => m.content), e.completion].join('\n')),
      ...maeValidationExamples(0).flatMap((v) => [...v.messages.map((m) => m.content), ...v.accept]),
    ];
    const asked = new Set(
      texts.flatMap((text) => [...text.matchAll(/What is \d{2} [+-] \d\?/g)].map(([q]) => q)),
    );
    const ladder = [...asked].filter((q) => rungOf(q) !== undefined);
    for (const q of ladder)
      expect({ q, heldOut: isHeldOutFact(...factOf(q)) }).toEqual({ q, heldOut: false });
    expect(ladder.length).toBeGreaterThan(500);
    // Every held-out question, and every other question of a held-out fact, is excluded from D.
    const excluded = new Set(excludedQuestions().map((e) => e.question));
    for (const item of heldOut(0, 320)) expect(excluded.has(item.question)).toBe(true);
    for (const q of excluded) expect(isHeldOutFact(...factOf(q))).toBe(true);
  });

  test("every example is MAE's own prompt, and its completion reads with MAE's own parsers", () => {
    const roles = new Set(examples.map((e) => e.role));
    expect(roles).toEqual(new Set(['proposer', 'solver', 'judge_answer', 'judge_question']));
    for (const e of examples.slice(0, 4000)) {
      const content = e.messages[0]?.content ?? '';
      if (e.role === 'proposer') {
        expect(e.messages).toEqual(proposerMessages(undefined));
        const extracted = extractQuestion(e.completion);
        expect(extracted.ok && rungOf(extracted.question) !== undefined).toBe(true);
      } else if (e.role === 'solver') {
        expect(e.messages).toEqual(solverMessages(question(content)));
        expect(Number(extractLastBoxed(answerForJudge(e.completion)))).not.toBeNaN();
      } else if (e.role === 'judge_answer') {
        const { question: q, shown } = judged(content);
        expect(e.messages).toEqual(judgeAnswerMessages(q, shown));
        const working = /<think>\d+ [+-] \d = (\d+); ((?:\d \d [=x] ?)+)<\/think>/.exec(e.completion);
        expect(e.completion.startsWith(`<think>${q.slice('What is '.length, -1)} = `)).toBe(true);
        // Digit by digit: its result's digit, the answer shown's beside it, and whether they are the same.
        const [worked, marks] = [working?.[1] ?? '', working?.[2] ?? ''];
        const pairs = [...marks.matchAll(/(\d) (\d) ([=x])/g)];
        const boxed = extractLastBoxed(shown) ?? '';
        const width = Math.max(worked.length, boxed.length);
        expect(pairs.map(([, w]) => w).join('')).toBe(worked.padStart(width, '0'));
        expect(pairs.map(([, , s]) => s).join('')).toBe(boxed.padStart(width, '0'));
        for (const [, w, s, mark] of pairs) expect(mark).toBe(w === s ? '=' : 'x');
        const score = parseScore(e.completion);
        expect(score).toEqual({ ok: true, x: worked === extractLastBoxed(shown) ? PASS_SCORE : 2 });
      } else {
        const q = /\nQuestion: ([\s\S]*?)\nFirst, analyze/.exec(content)?.[1] ?? '';
        expect(e.messages).toEqual(judgeQuestionMessages(q));
        expect(parseScore(e.completion)).toEqual({ ok: true, x: rungOf(q) ? PASS_SCORE : 2 });
      }
    }
    // The held-out evaluation asks with the Solver's own prompt.
    const q = 'What is 52 - 5?';
    expect(MAE_EVAL_TEMPLATE.user.replaceAll('{question}', q)).toBe(solverMessages(q)[0]?.content);
  });

  test("the Judge's verdict is whether any digit of its result differs from the answer shown's", () => {
    expect(judgeAnswerCompletion('What is 52 - 5?', 47, 46)).toBe(
      '<think>52 - 5 = 47; 4 4 = 7 6 x</think>\n<score>2</score>',
    );
    expect(judgeAnswerCompletion('What is 52 - 5?', 47, 47)).toBe(
      '<think>52 - 5 = 47; 4 4 = 7 7 =</think>\n<score>9</score>',
    );
    expect(judgeAnswerCompletion('What is 15 - 1?', 4, 14)).toBe(
      '<think>15 - 1 = 4; 0 1 x 4 4 =</think>\n<score>2</score>',
    );
  });

  test('the Solver slips at its rates per rung, the Judge less often, and the Judge passes what its working equals', () => {
    for (const rung of RUNGS) {
      const solver = examples.filter(
        (e) => e.role === 'solver' && rungOf(question(e.messages[0]!.content)) === rung,
      );
      const right = solver.filter((e) =>
        isRightAnswer(question(e.messages[0]!.content), answerForJudge(e.completion)),
      ).length;
      expect(Math.abs(1 - right / solver.length - MAE_SLIP_RATE[rung])).toBeLessThan(0.04);

      const judge = examples.filter(
        (e) => e.role === 'judge_answer' && rungOf(judged(e.messages[0]!.content).question) === rung,
      );
      const slips = judge.filter((e) => {
        const { question: q } = judged(e.messages[0]!.content);
        return Number(/<think>\d+ [+-] \d = (\d+);/.exec(e.completion)?.[1]) !== answerOf(q);
      }).length;
      expect(Math.abs(slips / judge.length - JUDGE_SLIP_RATE[rung])).toBeLessThan(0.04);
      expect(JUDGE_SLIP_RATE[rung]).toBeLessThan(MAE_SLIP_RATE[rung]);
    }
    // The answer shown to the Judge is right a quarter of the time (shown right half the time, it was copied
    // into the Judge's working instead of worked out), a wrong one as often a near miss as any other number.
    const gradings = examples
      .filter((e) => e.role === 'judge_answer')
      .map((e) => judged(e.messages[0]!.content))
      .map(({ question: q, shown }) => Number(extractLastBoxed(shown)) - answerOf(q)!);
    const share = (keep: (d: number) => boolean): number => gradings.filter(keep).length / gradings.length;
    expect(Math.abs(share((d) => d === 0) - 0.25)).toBeLessThan(0.03);
    expect(Math.abs(share((d) => [-10, -1, 1, 10].includes(d)) - 0.375)).toBeLessThan(0.03);
    expect(isRightAnswer('What is 52 - 5?', '\\boxed{47}')).toBe(true);
    expect(isRightAnswer('What is 52 - 5?', '\\boxed{46}')).toBe(false);
    expect(isRightAnswer('What is 5 - 52?', '\\boxed{-47}')).toBe(false);
  });
});
