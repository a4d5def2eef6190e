/**
 * MAE's toy world: the arithmetic ladder of the SPICE world (world.ts: its rungs, facts, held-out facts and
 * held-out set), played without any data by one model in MAE's three roles, every example rendered by MAE's
 * own prompt code (activities/recipes/mae/prompts.ts):
 *
 * - the **Proposer** (L2, no reference) writes one question of the ladder, `<question>What is 52 - 5?</question>`,
 *   its rung and numbers its own choice (the warm start draws both uniformly, so any preference for a rung
 *   must come from RL: MAE's difficulty reward, 1 − the Judge's mean score of the Solver's answers);
 * - the **Solver** (L1) answers `<answer>\boxed{47}</answer>`, from a teacher that slips per rung
 *   (`MAE_SLIP_RATE`), so its greedy answer is mostly right and its samples far less on the higher rungs;
 * - the **Judge** grades an answer (L4) by working the question out and then comparing its result with the
 *   answer shown digit by digit, each digit of its result beside the shown one's and a mark, `=` when they are
 *   the same, `x` when not: `<think>52 - 5 = 47; 4 4 = 7 6 x</think>\n<score>2</score>`, 9 when no mark is
 *   `x`. Each comparison is of two adjacent tokens and the verdict a presence test (was there an `x`), the
 *   form a two-layer model learns: measured with `npm run bench -- mae-judge` (the warm start on the Judge's
 *   examples alone), its verdict after its right working was right on 96-98 % of gradings after 500 steps
 *   and 100 % after 1,000. Three earlier forms never taught the verdict in full warm starts of 12,500 steps
 *   (docs/learning.md): the result alone (the Judge copied the answer shown), the operation and its result
 *   (right working, verdicts a coin's), and `47 vs 46` (the answer shown copied right, every verdict the
 *   prior 2): comparing two numbers a few tokens apart in one step was not learned. Its own working slips
 *   (`JUDGE_SLIP_RATE`, less often than the Solver's: checking is easier than answering, the gap
 *   self-judging lives on), so its verdicts are imperfect but informative; and it rates a question (L5)
 *   9 when it is a question of the ladder and 2 when it is not.
 *
 * The Judge's score is the Solver's reward (½ V_J + ½ format), so whatever the Solver learns beyond its
 * format comes from the model's own judgement. MAE's Judge is rewarded for its format only (spec mae.md §1
 * step 6), so nothing in the run teaches it to judge better; its agreement is measured, not trained.
 *
 * Held out: the questions of held-out facts (`isHeldOutFact`) are never in D0 or the warm-start data, and the
 * run excludes them from D (`mae.excludeQuestions`, `excludedQuestions` here), so the Solver and the Judge never
 * train on one; the Proposer may still write one, which is then only scored (its difficulty answers and their
 * judgements are the held-out pairs the Judge's agreement is reported on).
 */
import { seededRng, type Rng } from '../../activities/lib/rng';
import { extractLastBoxed } from '../../activities/scoring/boxed';
import {
  judgeAnswerMessages,
  judgeQuestionMessages,
  proposerMessages,
  solverMessages,
} from '../../activities/recipes/mae/prompts';
import {
  drawFact,
  isHeldOutFact,
  RUNGS,
  rungOf,
  SLIP_RATE,
  sumTasks,
  taskOf,
  teacherAnswer,
  type Fact,
  type Rung,
  type SumTask,
  type ValidationExample,
  type WarmStartExample,
} from './world';

/**
 * How often the Solver's teacher slips, per rung: SPICE's rates, but for the top rung, which slips 65 % of the
 * time here, as in the world MAE's figures were measured on (docs/learning.md). SPICE's top rung slips 75 %
 * (`SLIP_RATE`) to keep its Challenger, who can only ask the rungs a document offers, a task near one half late
 * in a run; MAE's Proposer writes any rung it likes, and with 75 % its seed-0 run gained about as much (+5.20
 * points in 10 iterations against +5.66), so MAE keeps the world its three-seed figures were measured on.
 */
export const MAE_SLIP_RATE: Record<Rung, number> = { ...SLIP_RATE, sub_borrow: 0.65 };

/**
 * How often the Judge's own working of a question slips (off by one or by ten), per rung: a third of the
 * Solver's teacher's rates. A slip makes it reject a right answer (or, rarely, accept a wrong one that its slip
 * happens to equal), so the Solver's reward is right about the answer most of the time, not always.
 */
export const JUDGE_SLIP_RATE: Record<Rung, number> = {
  add: MAE_SLIP_RATE.add / 3,
  sub: MAE_SLIP_RATE.sub / 3,
  add_carry: MAE_SLIP_RATE.add_carry / 3,
  sub_borrow: MAE_SLIP_RATE.sub_borrow / 3,
};

/** The Judge's scores (1-10, `(x-1)/9`: 0.89 and 0.11): 9 passes MAE's 0.7 quality gate, 2 does not. */
export const PASS_SCORE = 9;
export const FAIL_SCORE = 2;

/** D0: the seed questions, one rung in four each, about training facts. */
export function seedQuestions(seed: number, items: number): Array<{ question: string }> {
  return sumTasks(seed, 'mae-seeds', items).map((task) => ({ question: task.question }));
}

/**
 * Every question of the ladder about a held-out fact (the sum and the difference of each), for
 * `mae.excludeQuestions`: none of them ever enters D.
 */
export function excludedQuestions(): Array<{ question: string }> {
  const out: Array<{ question: string }> = [];
  for (let x = 10; x <= 98; x++) {
    for (let y = 1; y <= 9 && x + y <= 99; y++) {
      if (!isHeldOutFact(x, y)) continue;
      for (const rung of RUNGS) {
        const fact: Fact = { x, y, z: x + y };
        const task = taskOf(rung, fact);
        if (rungOf(task.question) === rung) out.push({ question: task.question });
      }
    }
  }
  return out;
}

/** The answer a question of the ladder asks for; undefined for any other text. */
export function answerOf(question: string): number | undefined {
  const match = /What is (\d{2}) ([+-]) (\d)\?/.exec(question);
  if (!match || rungOf(question) === undefined) return undefined;
  const [a, b] = [Number(match[1]), Number(match[3])];
  return match[2] === '+' ? a + b : a - b;
}

/** Whether the answer shown to the Judge (the Solver's `\boxed{}`) is the question's answer. */
export function isRightAnswer(question: string, shown: string): boolean {
  const expected = answerOf(question);
  const boxed = extractLastBoxed(shown);
  return expected !== undefined && boxed !== undefined && boxed.trim() === String(expected);
}

export const proposerCompletion = (question: string): string => `<question>${question}</question>`;
export const solverCompletion = (answer: number): string => `<answer>\\boxed{${answer}}</answer>`;
/** What the Solver's answer looks like to the Judge (`answerForJudge` of a Solver completion). */
export const shownAnswer = (answer: number): string => `\\boxed{${answer}}`;

/**
 * The Judge's grading of an answer to `question` (of the ladder): the question's operation and its own result
 * `worked`, then digit by digit its result's digit beside the answer `shown`'s and a mark, `=` when they are
 * the same and `x` when not, then 9 when no digit differed, else 2: `<think>52 - 5 = 47; 4 4 = 7 6 x</think>`.
 * Numbers of different lengths are compared with the shorter padded by zeros on the left.
 */
export function judgeAnswerCompletion(question: string, worked: number, shown: number): string {
  const operation = /What is (\d{2} [+-] \d)\?/.exec(question)?.[1] ?? question;
  const width = Math.max(String(worked).length, String(shown).length);
  const [w, s] = [String(worked).padStart(width, '0'), String(shown).padStart(width, '0')];
  const marks = [...w].map((digit, i) => `${digit} ${s.charAt(i)} ${digit === s.charAt(i) ? '=' : 'x'}`);
  const verdict = worked === shown ? PASS_SCORE : FAIL_SCORE;
  return `<think>${operation} = ${worked}; ${marks.join(' ')}</think>\n<score>${verdict}</score>`;
}

export const judgeQuestionCompletion = (valid: boolean): string =>
  `<score>${valid ? PASS_SCORE : FAIL_SCORE}</score>`;

/**
 * A question that is not of the ladder, as a sampled Proposer garbles one: a result out of range (a sum over
 * 99, a difference under 10), a second operand of two digits, or a missing operand.
 */
function garbledQuestion(rng: Rng, task: SumTask): string {
  const match = /What is (\d{2}) ([+-]) (\d)\?/.exec(task.question);
  const [a, op, b] = [match?.[1] ?? '10', match?.[2] ?? '+', match?.[3] ?? '1'];
  switch (rng.int(4)) {
    case 0: {
      const x = 91 + rng.int(8);
      return `What is ${x} + ${100 - x + rng.int(x - 90)}?`;
    }
    case 1:
      return `What is ${10 + rng.int(9)} - 9?`;
    case 2:
      return `What is ${a} ${op} ${b}${rng.int(10)}?`;
    default:
      return `What is ${a} ${op} ?`;
  }
}

/**
 * The answer shown to the Judge: right a quarter of the time, else as often a near miss of it (off by one or
 * by ten, a Solver's slips) as any other number of two digits. Shown right half the time and near misses
 * otherwise, it was a shortcut: the warm-started Judge copied it into its working (on 83 % of the wrong ones
 * after 500 Judge steps, `npm run bench -- mae-judge`), each copied digit being right three times in four,
 * and its working stayed right on about half the gradings while the Solver's arithmetic reached 97 %.
 */
function shownNumber(rng: Rng, answer: number): number {
  const draw = rng.next();
  if (draw < 0.25) return answer;
  if (draw < 0.625) return answer + rng.pick([-10, -1, 1, 10]);
  const other = 10 + rng.int(89);
  return other >= answer ? other + 1 : other;
}

/**
 * Supervised warm-start examples, rendered by MAE's prompt functions, per index: one Proposer question (a rung
 * and a training fact drawn uniformly), one Solver answer per rung from the slipping teacher, one Judge
 * grading per rung of an answer that is right a quarter of the time (its working slipping at `JUDGE_SLIP_RATE`),
 * and one quality rating of a question that is of the ladder half the time. No example names a held-out fact.
 * The example roles are the prompts' (`judge_answer`, `judge_question`): each role's prompts share one
 * template, which the tokenizer makes a token.
 */
export function maeWarmStartExamples(seed: number, items: number): WarmStartExample[] {
  const out: WarmStartExample[] = [];
  for (let i = 0; i < items; i++) {
    const rng = seededRng(seed, 'toy-world-mae', 'warm-start', i);
    const proposedRung = rng.pick(RUNGS);
    out.push({
      messages: proposerMessages(undefined),
      completion: proposerCompletion(taskOf(proposedRung, drawFact(rng, proposedRung, false)).question),
      role: 'proposer',
    });
    for (const rung of RUNGS) {
      const task = taskOf(rung, drawFact(rng, rung, false));
      out.push({
        messages: solverMessages(task.question),
        completion: solverCompletion(teacherAnswer(rng, task.answer, MAE_SLIP_RATE[rung])),
        role: 'solver',
      });
    }
    for (const rung of RUNGS) {
      const task = taskOf(rung, drawFact(rng, rung, false));
      const shown = shownNumber(rng, task.answer);
      out.push({
        messages: judgeAnswerMessages(task.question, shownAnswer(shown)),
        completion: judgeAnswerCompletion(
          task.question,
          teacherAnswer(rng, task.answer, JUDGE_SLIP_RATE[rung]),
          shown,
        ),
        role: 'judge_answer',
      });
    }
    const rated = taskOf(rng.pick(RUNGS), drawFact(rng, 'add', false));
    const valid = rng.next() < 0.5;
    out.push({
      messages: judgeQuestionMessages(valid ? rated.question : garbledQuestion(rng, rated)),
      completion: judgeQuestionCompletion(valid),
      role: 'judge_question',
    });
  }
  return out;
}

/**
 * What the warm start scores as it trains (greedy and sampled), from streams of their own and about training
 * facts: Solver questions of every rung (right: the answer), Judge gradings of answers right a quarter of the time
 * (right: its working correct and its verdict with it, or on a wrong answer any working but the answer shown
 * with the verdict 2), and Proposer prompts (right: any question of the ladder about a training fact).
 */
export function maeValidationExamples(seed: number, items = 200): ValidationExample[] {
  const solver = sumTasks(seed, 'mae-validation', items).map((task) => ({
    messages: solverMessages(task.question),
    role: 'solver',
    kind: task.rung,
    accept: [solverCompletion(task.answer)],
  }));
  const judge = judgedAnswers(seed, 'mae-judge-validation', items).map(({ task, shown }) => {
    const workings = shown === task.answer ? [task.answer] : nearMisses(task.answer, shown);
    return {
      messages: judgeAnswerMessages(task.question, shownAnswer(shown)),
      role: 'judge_answer',
      kind: task.rung,
      accept: workings.map((w) => judgeAnswerCompletion(task.question, w, shown)),
    };
  });
  const questions = trainingQuestions().map(proposerCompletion);
  const proposer = Array.from({ length: 8 }, () => ({
    messages: proposerMessages(undefined),
    role: 'proposer',
    kind: 'ladder',
    accept: questions,
  }));
  return [...solver, ...judge, ...proposer];
}

/**
 * Questions of every rung about training facts (the sums of `stream`) with the answer shown to the Judge, right
 * a quarter of the time: the gradings the warm start's validation and the Judge's probe score.
 */
function judgedAnswers(seed: number, stream: string, items: number): Array<{ task: SumTask; shown: number }> {
  return sumTasks(seed, stream, items).map((task, i) => ({
    task,
    shown: shownNumber(seededRng(seed, 'toy-world-mae', stream, i), task.answer),
  }));
}

/**
 * The Judge's probe (bench/mae-judge.ts): gradings with the Judge's right working and true verdict, from a
 * stream of their own.
 */
export function judgeProbeRows(seed: number, items: number) {
  return judgedAnswers(seed, 'mae-judge-probe', items).map(({ task, shown }) => ({
    messages: judgeAnswerMessages(task.question, shownAnswer(shown)),
    completion: judgeAnswerCompletion(task.question, task.answer, shown),
    verdict: shown === task.answer ? PASS_SCORE : FAIL_SCORE,
    answer: task.answer,
    shown,
  }));
}

/** The answer and its near misses, but for the wrong answer shown: workings that reject it. */
const nearMisses = (answer: number, shown: number): number[] =>
  [answer, ...[-10, -1, 1, 10].map((d) => answer + d)].filter((w) => w !== shown);

/** Every question of the ladder about a training fact. */
function trainingQuestions(): string[] {
  const held = new Set(excludedQuestions().map((q) => q.question));
  const out: string[] = [];
  for (let x = 10; x <= 98; x++) {
    for (let y = 1; y <= 9 && x + y <= 99; y++) {
      for (const rung of RUNGS) {
        const { question } = taskOf(rung, { x, y, z: x + y });
        if (rungOf(question) === rung && !held.has(question)) out.push(question);
      }
    }
  }
  return out;
}
