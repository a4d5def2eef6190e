import { extractAnswer, parseQuestioner, parseVote } from '../../activities/recipes/spell/parse';
import { ruleCheck } from '../../activities/recipes/spell/rules';
import { buildClusters } from '../../activities/recipes/spell/clusters';
import { SPELL_DEFAULTS } from '../../config/presets/spell';
import {
  responderCompletion,
  spellCluster,
  spellCorpus,
  spellHeldOut,
  spellValidationExamples,
  spellWarmStartExamples,
  spellWorldMessages,
  SPELL_WORLD_TASK,
  VERIFIER_SLIP_RATE,
} from '../../infra/toy-world/spell-world';
import { isHeldOutFact, RUNGS, SLIP_RATE } from '../../infra/toy-world/world';

/**
 * SPELL's toy world (infra/toy-world/spell-world.ts, docs/learning.md): held-out clusters whose facts nothing
 * trained on states, warm-start examples that SPELL's own parsers and rule check read as the world means
 * them, and teachers that slip at the rates the world promises.
 */
describe("SPELL's toy world", () => {
  const examples = spellWarmStartExamples(0, 2000);
  const facts = (text: string): Array<[number, number]> =>
    [...text.matchAll(/holds (\d+) crates\.\nDepot \w+ \w+ (receives|ships) (\d) crates/g)].map((m) => {
      const [holds, moved] = [Number(m[1]), Number(m[3])];
      return m[2] === 'receives' ? [holds, moved] : [holds - moved, moved];
    });

  test('held-out clusters state held-out facts only, and nothing trained on states one', () => {
    const heldOut = spellHeldOut(0, 320);
    const heldOutFacts = heldOut.flatMap((item) => facts(item.question));
    expect(heldOutFacts).toHaveLength(320);
    for (const [x, y] of heldOutFacts) expect(isHeldOutFact(x, y)).toBe(true);

    const corpusText = spellCorpus(0, 2000)
      .map((d) => d.text)
      .join('\n');
    const trained = [
      ...facts(corpusText.replace(/crates\.\n(?=Depot \w+ \w+ holds)/g, 'crates.\n\n')),
      ...examples.flatMap((e) => facts(e.messages.map((m) => m.content).join('\n'))),
    ];
    expect(trained.length).toBeGreaterThan(4000);
    // Every document is distinct: the corpus loader drops one whose text it has seen.
    const texts = spellCorpus(0, 2000).map((d) => d.text);
    expect(new Set(texts).size).toBe(texts.length);
    for (const [x, y] of trained) expect(isHeldOutFact(x, y)).toBe(false);
  });

  test("the corpus's clusters are SPELL's: two documents each, serving financial math", () => {
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
      expect(c.documents).toHaveLength(2);
      expect(c.tasks).toEqual([SPELL_WORLD_TASK]);
    }
  });

  test("SPELL's parsers read the teachers' completions as the world means them", () => {
    for (const example of examples.slice(0, 300)) {
      const prompt = example.messages[0]?.content ?? '';
      if (example.role === 'questioner') {
        const outcome = parseQuestioner(example.completion, SPELL_WORLD_TASK, 40);
        expect(outcome.kind).toBe('question');
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
    expect(ruleCheck(question, extractAnswer(responderCompletion(cluster.answer)))).toBe(true);
    expect(ruleCheck(question, extractAnswer(responderCompletion(cluster.answer + 1)))).toBe(false);
    expect(spellWorldMessages.responder(cluster)[0]?.content).toContain(cluster.documents.join('\n'));
  });

  test('the teachers slip at their rates: the responder per rung, the verifier on its decisions', () => {
    const responder = examples.filter((e) => e.role === 'responder');
    const slips = (rung: string): number => {
      const ofRung = responder.filter((_, i) => RUNGS[i % RUNGS.length] === rung);
      const wrong = ofRung.filter((e) => {
        const [, holds, verb, moved] =
          /holds (\d+) crates\.\nDepot \w+ \w+ (\w+) (\d) /.exec(e.messages[0]?.content ?? '') ?? [];
        const answer = verb === 'receives' ? Number(holds) + Number(moved) : Number(holds) - Number(moved);
        return Number(extractAnswer(e.completion)) !== answer;
      });
      return wrong.length / ofRung.length;
    };
    for (const rung of RUNGS) expect(Math.abs(slips(rung) - SLIP_RATE[rung])).toBeLessThan(0.06);

    const verifier = examples.filter((e) => e.role === 'verifier');
    const flipped = verifier.filter((e) => {
      const [, one, two] = /Answer 1: (\d+)\n- Answer 2: (\d+)/.exec(e.messages[0]?.content ?? '') ?? [];
      return (parseVote(e.completion) === 1) !== (one === two);
    });
    expect(Math.abs(flipped.length / verifier.length - VERIFIER_SLIP_RATE)).toBeLessThan(0.04);
  });

  test('validation accepts exactly the right completion of every role', () => {
    const validation = spellValidationExamples(0);
    expect(new Set(validation.map((v) => v.role))).toEqual(new Set(['questioner', 'responder', 'verifier']));
    for (const v of validation) expect(v.accept).toHaveLength(1);
  });
});
