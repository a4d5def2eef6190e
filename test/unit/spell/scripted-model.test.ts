import { SPELL_CALLS } from '../../../activities/clients/llm-protocol';
import { extractAnswer, parseQuestioner, parseVote } from '../../../activities/recipes/spell/parse';
import {
  questionerMessages,
  responderMessages,
  verifierMessages,
  EMPTY_CONTEXT,
} from '../../../activities/recipes/spell/prompts';
import { ruleCheck } from '../../../activities/recipes/spell/rules';
import type { SpellQuestion, SpellTask } from '../../../activities/recipes/spell/records';
import { loadCorpus } from '../../../activities/corpus/corpus';
import { BEHAVIOURS } from '../../support/scripted-llm/behaviour';
import {
  applyPatch,
  configPatchSchema,
  DEFAULT_CONFIG,
  type BehaviourSettings,
} from '../../support/scripted-llm/config';
import type { ChatMessage } from '../../../activities/clients/trainer-contract';

/** The scripted model's SPELL behaviours speak the recipe's formats: what one writes, the other parses. */
const write = (
  call: string,
  messages: ChatMessage[],
  seed: number,
  settings: Partial<BehaviourSettings> = {},
) =>
  BEHAVIOURS[call]!.answer({
    messages,
    seed,
    temperature: 0.7,
    index: 0,
    settings: { ...DEFAULT_CONFIG, ...settings },
  });

const TASKS: SpellTask[] = ['general_qa', 'financial_math', 'multiple_choice'];
let documents: string;
beforeAll(async () => {
  const corpus = await loadCorpus('test/fixtures/corpus/clusters.jsonl');
  documents = corpus.segments
    .filter((s) => s.metadata.cluster === 'food')
    .slice(0, 5)
    .map((s) => s.text)
    .join('\n');
});

function questions(task: SpellTask, settings: Partial<BehaviourSettings>): SpellQuestion[] {
  return Array.from({ length: 20 }, (_, seed) => {
    const outcome = parseQuestioner(
      write(SPELL_CALLS.questioner, questionerMessages(task, documents, [], 'D'), seed, settings),
      task,
      40,
    );
    if (outcome.kind !== 'question') throw new Error(`seed ${seed}: ${JSON.stringify(outcome)}`);
    return outcome.question;
  });
}

describe('scripted SPELL model', () => {
  test.each(TASKS)(
    '%s: grounded questions the responder answers from the documents, and not without them',
    (task) => {
      const settings = { invalidTaskRate: 0, ungroundedRate: 0, passRate: { min: 1, max: 1 } };
      for (const [i, q] of questions(task, settings).entries()) {
        if (task === 'multiple_choice') expect(q.answer).toBe('D');
        const answer = extractAnswer(
          write(SPELL_CALLS.responder, responderMessages(q, documents), i, settings),
        );
        // Right answers may come in another scale or phrasing, but the rule accepts them.
        if (answer !== null) expect(ruleCheck(q, answer)).toBe(true);
        if (task !== 'multiple_choice') {
          const probe = extractAnswer(
            write(SPELL_CALLS.grounding, responderMessages(q, EMPTY_CONTEXT), i, settings),
          );
          expect(ruleCheck(q, probe)).toBe(false);
        }
      }
    },
  );

  test.each(TASKS)('%s: an ungrounded question is answerable without documents', (task) => {
    const settings = { invalidTaskRate: 0, ungroundedRate: 1, passRate: { min: 1, max: 1 } };
    const passed = questions(task, settings).filter((q, i) =>
      ruleCheck(
        q,
        extractAnswer(write(SPELL_CALLS.grounding, responderMessages(q, EMPTY_CONTEXT), i, settings)),
      ),
    );
    expect(passed.length).toBeGreaterThanOrEqual(18); // all but the odd reply without an answer phrase
  });

  test('a hopeless responder never gets the rule right', () => {
    const settings = { invalidTaskRate: 0, ungroundedRate: 0, passRate: { min: 0, max: 0 } };
    for (const task of TASKS)
      for (const [i, q] of questions(task, settings).entries())
        expect(
          ruleCheck(
            q,
            extractAnswer(write(SPELL_CALLS.responder, responderMessages(q, documents), i, settings)),
          ),
        ).toBe(false);
  });

  test('questioner format errors and discards at invalidTaskRate', () => {
    const kinds = Array.from(
      { length: 200 },
      (_, seed) =>
        parseQuestioner(
          write(SPELL_CALLS.questioner, questionerMessages('general_qa', documents, []), seed, {
            invalidTaskRate: 0.5,
          }),
          'general_qa',
          40,
        ).kind,
    );
    expect(kinds.filter((k) => k === 'question').length).toBeGreaterThan(70);
    expect(kinds).toContain('bad_format');
    expect(kinds).toContain('discarded');
  });

  test('the verifier mostly agrees with the truth, with noise and malformed judgments', () => {
    const q: SpellQuestion = { task: 'financial_math', question: 'How much?', answer: '189.5' };
    const votes = (predicted: string) =>
      Array.from({ length: 200 }, (_, seed) =>
        parseVote(write(SPELL_CALLS.verifier, verifierMessages(q, predicted), seed)),
      );
    const same = votes('189500000');
    const different = votes('201.3');
    expect(same.filter((v) => v === 1).length).toBeGreaterThan(150);
    expect(different.filter((v) => v === 0).length).toBeGreaterThan(150);
    for (const v of [same, different]) {
      expect(v).toContain(-1);
      expect(v.filter((x) => x === -1).length).toBeLessThan(40);
    }
  });

  test('ungroundedRate is a validated server setting', () => {
    expect(applyPatch(DEFAULT_CONFIG, configPatchSchema.parse({ ungroundedRate: 0.4 })).ungroundedRate).toBe(
      0.4,
    );
    expect(() => configPatchSchema.parse({ ungroundedRate: 2 })).toThrow();
  });
});
