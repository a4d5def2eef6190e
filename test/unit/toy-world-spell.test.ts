import { extractAnswer, parseQuestioner, parseVote } from '../../activities/recipes/spell/parse';
import { ruleCheck } from '../../activities/recipes/spell/rules';
import { buildClusters } from '../../activities/recipes/spell/clusters';
import { SPELL_DEFAULTS } from '../../config/presets/spell';
import {
  RESPONDER_SLIPS,
  responderCompletion,
  SHEETS,
  spellCluster,
  spellCorpus,
  spellHeldOut,
  spellValidationExamples,
  spellWarmStartExamples,
  spellWorldMessages,
  SPELL_WORLD_TASK,
  spokenName,
  VERIFIER_SLIP_RATE,
} from '../../infra/toy-world/spell-world';

/**
 * SPELL's toy world (infra/toy-world/spell-world.ts, docs/learning.md): held-out clusters whose depots nothing
 * trained on names, warm-start examples that SPELL's own parsers and rule check read as the world means
 * them, and teachers that slip at the rates the world promises.
 */
describe("SPELL's toy world", () => {
  const examples = spellWarmStartExamples(0, 2000);
  const SHEET = /Depot (\d\d)(\d\d) crates\./g;
  const sheets = (text: string): Array<[string, number]> =>
    [...text.matchAll(SHEET)].map((m) => [m[1] as string, Number(m[2])]);
  // Every name a depot may have, by its words in a question.
  const byWords = new Map(
    Array.from({ length: 78 }, (_, i) => String(21 + i))
      .filter((name) => !name.includes('0'))
      .map((name) => [spokenName(name), name]),
  );
  const askedName = (prompt: string): string =>
    byWords.get(/does Depot( \w+-\w+) hold\?/.exec(prompt)?.[1] ?? '') ?? '';

  test('held-out clusters name held-out depots only, and nothing trained on names one', () => {
    const heldOut = spellHeldOut(0, 320);
    const heldOutNames = new Set(heldOut.flatMap((item) => sheets(item.question).map(([name]) => name)));
    for (const item of heldOut) {
      expect(sheets(item.question)).toHaveLength(SHEETS);
      expect(heldOutNames.has(askedName(item.question))).toBe(true);
    }

    const corpus = spellCorpus(0, 600);
    const trainedText = [
      ...corpus.map((d) => d.text),
      ...examples.flatMap((e) => [...e.messages.map((m) => m.content), e.completion]),
      ...spellValidationExamples(0).flatMap((v) => v.messages.map((m) => m.content)),
    ].join('\n');
    const trainedNames = new Set([...trainedText.matchAll(/Depot (\d\d)/g)].map((m) => m[1] as string));
    // The 64 names from 21 to 98 without a 0 or a repeated digit: 51 trained, 13 held out.
    expect(trainedNames.size).toBe(51);
    expect(heldOutNames.size).toBe(13);
    for (const name of heldOutNames) expect(trainedNames.has(name)).toBe(false);
    // Each digit stands in both places of some trained name (2-9 first, 1-9 last): a held-out name is a new
    // pair, not a new digit, and its words are a new pair of trained words.
    for (const place of [0, 1])
      expect(new Set([...trainedNames].map((name) => name.charAt(place))).size).toBe(place === 0 ? 8 : 9);
    // Every document is distinct: the corpus loader drops one whose text it has seen.
    expect(new Set(corpus.map((d) => d.text)).size).toBe(corpus.length);
  });

  test("a count follows its depot's last digit, which no other place of the responder's prompt holds", () => {
    // The responder's copy is an induction: the token after the depot's last digit in the sheets. A digit that
    // stood twice (v3's " holds " before every count, v6's depot digits again in the question) would leave it
    // a choice.
    const clusters = [0, 1, 2].flatMap((i) => [
      spellCluster(0, 'warm-start', i),
      spellCluster(0, 'held-out', i, true),
    ]);
    for (const c of clusters) {
      const digits = c.documents.join('\n').replace(/\D/g, '');
      expect(new Set(digits).size).toBe(digits.length);
      expect(c.question).toBe(`How many crates does Depot${spokenName(c.names[c.asked] ?? '')} hold?`);
      expect(c.question).not.toMatch(/\d/);
      c.names.forEach((name, i) =>
        expect(c.documents[i]).toContain(`${name.slice(-1)}${String(c.counts[i])}`),
      );
    }
  });

  test("the corpus's clusters are SPELL's: two sheets each, serving financial math", () => {
    const segments = spellCorpus(0, 10).map(({ id, text, ...metadata }) => ({
      id,
      docId: id,
      index: 0,
      text,
      metadata,
    }));
    const clusters = buildClusters(segments, SPELL_DEFAULTS);
    expect(clusters).toHaveLength(10);
    for (const c of clusters) {
      expect(c.documents).toHaveLength(SHEETS);
      expect(c.tasks).toEqual([SPELL_WORLD_TASK]);
    }
  });

  test("SPELL's parsers read the teachers' completions as the world means them", () => {
    for (const example of examples.slice(0, 300)) {
      const prompt = example.messages[0]?.content ?? '';
      if (example.role === 'questioner') {
        const outcome = parseQuestioner(example.completion, SPELL_WORLD_TASK, 40);
        if (outcome.kind !== 'question') throw new Error(`not a question: ${example.completion}`);
        // The question names a depot of the cluster, and its answer is that depot's number.
        const named = sheets(prompt).find(([name]) => name === askedName(outcome.question.question));
        expect(outcome.question.answer).toBe(String(named?.[1]));
        // It sees that one sheet and quotes it first: its question and answer copy digits from fixed places.
        expect(sheets(prompt)).toHaveLength(1);
        expect(example.completion).toMatch(
          new RegExp(`^<think>Depot ${named?.[0]}${named?.[1]} crates\\.</think>\\{`),
        );
      } else if (example.role === 'responder') {
        expect(extractAnswer(example.completion)).toMatch(/^\d+$/);
        expect(prompt).toContain('Therefore, the answer is');
      } else {
        expect([0, 1]).toContain(parseVote(example.completion));
      }
    }
    const cluster = spellCluster(0, 'check', 0);
    const question = {
      task: SPELL_WORLD_TASK,
      question: cluster.question,
      answer: String(cluster.answer),
    } as const;
    expect(
      ruleCheck(
        question,
        extractAnswer(responderCompletion(cluster.names[cluster.asked] ?? '', cluster.answer)),
      ),
    ).toBe(true);
    expect(
      ruleCheck(
        question,
        extractAnswer(responderCompletion(cluster.names[cluster.asked] ?? '', cluster.answer + 1)),
      ),
    ).toBe(false);
    expect(spellWorldMessages.responder(cluster)[0]?.content).toContain(cluster.documents.join('\n'));
  });

  test("the teachers slip at their rates: the responder's two slips, the verifier's decisions", () => {
    const slips = { wrongSheet: 0, offByOne: 0, right: 0 };
    for (const e of examples.filter((x) => x.role === 'responder')) {
      const prompt = e.messages[0]?.content ?? '';
      const counts = new Map(sheets(prompt));
      const right = counts.get(askedName(prompt));
      const given = Number(extractAnswer(e.completion));
      if (given === right) slips.right++;
      else if ([...counts.values()].includes(given)) slips.wrongSheet++;
      else if (Math.abs(given - (right ?? NaN)) === 1) slips.offByOne++;
      else throw new Error(`a slip of no kind: ${e.completion}`);
    }
    const n = slips.right + slips.wrongSheet + slips.offByOne;
    expect(Math.abs(slips.wrongSheet / n - RESPONDER_SLIPS.wrongSheet)).toBeLessThan(0.03);
    expect(Math.abs(slips.offByOne / n - RESPONDER_SLIPS.offByOne)).toBeLessThan(0.03);

    const verifier = examples.filter((e) => e.role === 'verifier');
    const flipped = verifier.filter((e) => {
      const [, one, two] = /Answer 1: (\d+)\n- Answer 2: (\d+)/.exec(e.messages[0]?.content ?? '') ?? [];
      return (parseVote(e.completion) === 1) !== (one === two);
    });
    expect(Math.abs(flipped.length / verifier.length - VERIFIER_SLIP_RATE)).toBeLessThan(0.03);
  });

  test('validation accepts exactly the right completions of every role', () => {
    const validation = spellValidationExamples(0);
    expect(new Set(validation.map((v) => v.role))).toEqual(new Set(['questioner', 'responder', 'verifier']));
    for (const v of validation) expect(v.accept).toHaveLength(1);
  });
});
