import { askedSum } from '../../activities/recipes/spice/arithmetic';
import {
  CARRY_DOCUMENT_SHARE,
  corpus,
  depotLog,
  factsStatedIn,
  heldOut,
  isHeldOutFact,
  RUNGS,
  rungOf,
  warmStartExamples,
  type Rung,
} from '../../infra/toy-world/world';

/**
 * The toy world's promises (infra/toy-world/world.ts, docs/learning.md): a held-out set that nothing the model
 * trains on or can be asked names, and a ladder whose rungs differ for the Reasoner only.
 */
describe('the toy world', () => {
  const documents = corpus(0, 2000);
  const heldOutItems = heldOut(0, 320);
  const examples = warmStartExamples(0, 2000);

  test('no held-out question is in the corpus, the warm-start data or a task a document allows', () => {
    const questions = heldOutItems.map((item) => item.question);
    expect(new Set(questions).size).toBe(questions.length);
    const operands = (question: string): [number, number] => {
      const match = /What is (\d+) ([+-]) (\d+)\?/.exec(question);
      if (!match) throw new Error(`not a world question: ${question}`);
      const [a, b] = [Number(match[1]), Number(match[3])];
      return match[2] === '+' ? [a, b] : [a - b, b];
    };
    for (const question of questions) expect(isHeldOutFact(...operands(question))).toBe(true);

    // Every fact a document's numbers state (its rows and their recombinations across rows) is a training one.
    for (const { text } of documents) {
      for (const fact of factsStatedIn(text)) expect(isHeldOutFact(fact.x, fact.y)).toBe(false);
    }
    // The warm start's documents likewise, and no question it asks or answers is about a held-out fact.
    const warmText = examples.map((e) => [...e.messages.map((m) => m.content), e.completion].join('\n'));
    let warmQuestions = 0;
    for (const text of warmText) {
      for (const [tally] of text.matchAll(/Tally\.( Row \d: [^.]*\.)+/g))
        for (const fact of factsStatedIn(tally)) expect(isHeldOutFact(fact.x, fact.y)).toBe(false);
      for (const [question] of text.matchAll(/What is \d+ [+-] \d+\?/g)) {
        expect(isHeldOutFact(...operands(question))).toBe(false);
        warmQuestions++;
      }
    }
    expect(warmQuestions).toBeGreaterThan(examples.length / 2);
  });

  test('the held-out set asks every rung equally, each answer right', () => {
    const byRung = new Map<string, number>();
    for (const item of heldOutItems) {
      const rung = rungOf(item.question);
      byRung.set(String(rung), (byRung.get(String(rung)) ?? 0) + 1);
      expect(item.answer.endsWith(`#### ${String(askedSum(item.question))}`)).toBe(true);
    }
    expect(Object.fromEntries(byRung)).toEqual(Object.fromEntries(RUNGS.map((r) => [r, 80])));
  });

  test('every document states one fact in one layout, as a sum or a difference equally often', () => {
    const written = new Map<string, number>();
    const logs = 600;
    for (let i = 0; i < logs; i++) {
      const log = depotLog(0, i);
      expect(log.text).toMatch(/^Tally\. Row 1: \d\d [+-] \d = \d\d\.$/);
      // Its two tasks, the sum and the difference of its fact, are neighbouring rungs, each right.
      const rungs = log.tasks.map((task) => rungOf(task.question));
      expect([
        ['add', 'sub'],
        ['add_carry', 'sub_borrow'],
      ]).toContainEqual(rungs);
      for (const task of log.tasks) {
        expect(rungOf(task.question)).toBe(task.rung);
        expect(String(askedSum(task.question))).toBe(String(task.answer));
      }
      const rung = log.tasks.find((t) =>
        log.text.includes(t.question.replace(/^What is (.*)\?$/, '$1')),
      )?.rung;
      written.set(String(rung), (written.get(String(rung)) ?? 0) + 1);
    }
    // A fact is written as its sum or its difference equally often, with a carry or without it: each rung is
    // the one written in the text (a copy in order) half the time its fact is drawn.
    expect([...written.keys()].sort()).toEqual([...RUNGS].sort());
    const count = (rung: Rung): number => written.get(rung) ?? 0;
    const carryShare = (count('add_carry') + count('sub_borrow')) / logs;
    expect(Math.abs(carryShare - CARRY_DOCUMENT_SHARE)).toBeLessThan(0.05);
    for (const [a, b] of [
      ['add', 'sub'],
      ['add_carry', 'sub_borrow'],
    ] as const)
      expect(Math.abs(count(a) / (count(a) + count(b)) - 0.5)).toBeLessThan(0.08);
  });

  test('rungOf reads the rung from the operands, and nothing from other questions', () => {
    expect(rungOf('What is 43 + 5?')).toBe('add');
    expect(rungOf('What is 47 + 5?')).toBe('add_carry');
    expect(rungOf('What is 48 - 5?')).toBe('sub');
    expect(rungOf('What is 52 - 5?')).toBe('sub_borrow');
    expect(rungOf('What is 97 + 5?')).toBeUndefined(); // three digits
    expect(rungOf('What is 5 + 47?')).toBeUndefined();
    expect(rungOf('What is 14 - 5?')).toBeUndefined(); // one digit
  });
});
