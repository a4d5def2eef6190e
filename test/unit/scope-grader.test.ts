import { SCOPE_CALLS } from '../../activities/clients/llm-protocol';
import { askBinaryJudge, parseBinaryScore } from '../../activities/judges/binary';
import { parseRubrics } from '../../activities/recipes/scope/parse';
import {
  graderMessages,
  identifiabilityMessages,
  relevanceMessages,
  rubricMessages,
} from '../../activities/recipes/scope/prompts';
import type { ChatMessage } from '../../activities/clients/trainer-contract';
import { scopeGrader } from '../../infra/toy-world/scope-grader';
import { chains, documentsOf, sspCorpus, type Chain } from '../../infra/toy-world/ssp-world';
import { scriptedEndpoint } from '../support/scripted-llm/endpoint';
import { startScopeGrader } from '../support/grader-servers';

/**
 * SCOPE's rule-based judge for the search world (infra/toy-world/scope-grader.ts), fed the recipe's own judge
 * prompts and read back with the recipe's own parsers: the gates pass tasks that name the source document's
 * entities and fail the rest, the rubrics are the facts the task asks for among those of the documents its
 * entities reach, and a grade passes an answer that names the rubric's entity and nothing else of its kind.
 */

const world = { documents: sspCorpus(0, 16) };
const [a, b] = chains(0, 16) as [Chain, Chain];
const [townDoc, personDoc] = documentsOf(a);
const text = (messages: ChatMessage[]): string => messages.map((m) => m.content).join('\n');
const rule = scopeGrader(world, 'rule');
const ask = (call: string, messages: ChatMessage[], seed = 1) =>
  parseBinaryScore(rule.answer(call, text(messages), seed)).value;
const task = `Explain who founded the town of ${a.town} and where that founder was born.`;

describe('SCOPE rule-based grader (toy search world)', () => {
  test('identifiability: 1 for a task naming an entity of the world, 0 for one naming none', () => {
    expect(ask(SCOPE_CALLS.gateIdentifiability, identifiabilityMessages(task))).toBe(1);
    const vague = "Summarise the coach's strategy in the final and what the club changed afterwards.";
    expect(ask(SCOPE_CALLS.gateIdentifiability, identifiabilityMessages(vague))).toBe(0);
    // A capitalised word that no document states is not an entity of the world.
    expect(ask(SCOPE_CALLS.gateIdentifiability, identifiabilityMessages('Explain who founded Zzyzx.'))).toBe(
      0,
    );
  });

  test("relevance: 1 iff the task names an entity of its source document, not another chain's", () => {
    expect(ask(SCOPE_CALLS.gateRelevance, relevanceMessages(townDoc.text, task))).toBe(1);
    expect(ask(SCOPE_CALLS.gateRelevance, relevanceMessages(personDoc.text, task))).toBe(0);
    const other = `Explain who founded the town of ${b.town}.`;
    expect(ask(SCOPE_CALLS.gateRelevance, relevanceMessages(townDoc.text, other))).toBe(0);
  });

  test('rubrics: the facts the task reaches through its context documents, parsed by the recipe', () => {
    const answer = (documents: string[]): string[] =>
      parseRubrics(
        rule.answer(SCOPE_CALLS.rubrics, text(rubricMessages('long_form_qa', task, documents)), 1),
        {
          min: 1,
          max: 5,
        },
      );
    // The source only: the founder; with the founder's document retrieved, the birthplace too.
    expect(answer([townDoc.text])).toEqual([`Identifies ${a.founder} as the founder of ${a.town}.`]);
    expect(answer([townDoc.text, personDoc.text, documentsOf(b)[0].text])).toEqual([
      `Identifies ${a.founder} as the founder of ${a.town}.`,
      `Identifies ${a.birthplace} as the birthplace of ${a.founder}.`,
    ]);
    // No fact about the task's entities: no rubric set (the recipe's `rubrics_invalid`).
    expect(answer([documentsOf(b)[0].text])).toEqual([]);
  });

  test('rubrics: only for what the task asks; a fact reached on the way to it gets none', () => {
    const rubrics = (question: string): string[] =>
      parseRubrics(
        rule.answer(
          SCOPE_CALLS.rubrics,
          text(rubricMessages('long_form_qa', question, [townDoc.text, personDoc.text])),
          1,
        ),
        { min: 1, max: 5 },
      );
    const founder = `Identifies ${a.founder} as the founder of ${a.town}.`;
    const birthplace = `Identifies ${a.birthplace} as the birthplace of ${a.founder}.`;
    expect(rubrics(`Which person founded the town of ${a.town}?`)).toEqual([founder]);
    expect(rubrics(`Where was the person who founded the town of ${a.town} born?`)).toEqual([birthplace]);
    expect(rubrics(`Which person founded the town of ${a.town}, and where was that person born?`)).toEqual([
      founder,
      birthplace,
    ]);
    // Words that ask for neither relation: every fact reached.
    expect(rubrics(`Tell me about ${a.town}.`)).toEqual([founder, birthplace]);
  });

  test('grade: the rubric passes an answer naming its entity and no other of its kind', () => {
    const rubric = `Identifies ${a.founder} as the founder of ${a.town}.`;
    const grade = (response: string) => ask(SCOPE_CALLS.grade, graderMessages(task, response, rubric));
    expect(grade(`${a.founder} founded it; he was born in ${a.birthplace}.`)).toBe(1);
    expect(grade(`${b.founder}`)).toBe(0);
    expect(grade(`${a.birthplace}`)).toBe(0);
    expect(grade(`${a.founder} or ${b.founder}`)).toBe(0);
    expect(grade('Someone founded it.')).toBe(0);
  });

  test('random mode grades regardless of the answer: right and wrong answers pass alike, about half', () => {
    const random = scopeGrader(world, 'random');
    const rubric = `Identifies ${a.founder} as the founder of ${a.town}.`;
    const rate = (response: string): number => {
      const bits = Array.from(
        { length: 200 },
        (_, seed) =>
          parseBinaryScore(
            random.answer(SCOPE_CALLS.grade, text(graderMessages(task, response, rubric)), seed),
          ).value,
      );
      return bits.reduce<number>((s, x) => s + x, 0) / bits.length;
    };
    for (const response of [a.founder, b.founder]) {
      expect(rate(response)).toBeGreaterThan(0.35);
      expect(rate(response)).toBeLessThan(0.65);
    }
    // Its gates stay the rule's, so the same tasks reach the Solver.
    expect(random.answer(SCOPE_CALLS.gateRelevance, text(relevanceMessages(townDoc.text, task)), 3)).toBe(
      rule.answer(SCOPE_CALLS.gateRelevance, text(relevanceMessages(townDoc.text, task)), 3),
    );
  });

  test('served behind the judge endpoint: the recipe client gets its verdicts over HTTP', async () => {
    const server = await startScopeGrader(world, 'rule');
    try {
      const llm = scriptedEndpoint(server);
      const verdict = (response: string) =>
        askBinaryJudge(llm, {
          role: 'judge',
          call: SCOPE_CALLS.grade,
          messages: graderMessages(task, response, `Identifies ${a.founder} as the founder of ${a.town}.`),
          seed: 7,
          temperature: 0.6,
          topP: 1,
          maxTokens: 256,
        });
      await expect(verdict(a.founder)).resolves.toEqual({ value: 1 });
      await expect(verdict(b.founder)).resolves.toEqual({ value: 0 });
    } finally {
      await server.close();
    }
  });
});
