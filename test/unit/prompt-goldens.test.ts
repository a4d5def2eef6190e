import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ChatMessage } from '../../activities/clients/trainer-contract';
import * as mae from '../../activities/recipes/mae/prompts';
import * as scope from '../../activities/recipes/scope/prompts';
import * as spell from '../../activities/recipes/spell/prompts';
import { SPELL_TASKS, type SpellQuestion } from '../../activities/recipes/spell/records';
import * as spice from '../../activities/recipes/spice/prompts';
import * as ssp from '../../activities/recipes/ssp/prompts';
import { SCOPE_TASK_TYPES } from '../../config/presets/scope';

/**
 * Every prompt each recipe renders, byte for byte, against a file under test/fixtures/prompts/: the text the
 * model sees exists in the repository, where a reviewer reads a prompt change as a diff of that text (SPELL's
 * questioner assembles its with-history templates from parts; here they are whole). After an intended change:
 *
 *   UPDATE_PROMPTS=1 npx jest test/unit/prompt-goldens.test.ts
 */

const DIR = path.join(__dirname, '../fixtures/prompts');
const UPDATE = process.env.UPDATE_PROMPTS === '1';

const DOCUMENT = 'The Harbour Bridge opened in 1932. It carries 160,000 vehicles a day across 1,149 metres.';
const SECOND_DOCUMENT = 'Its arch was built from both shores and joined on 19 August 1930.';
const QUESTION = 'How many years after its arch was joined did the bridge open?';

const spellQuestions: Record<(typeof SPELL_TASKS)[number], SpellQuestion> = {
  general_qa: { task: 'general_qa', question: QUESTION, answer: '2 years' },
  financial_math: {
    task: 'financial_math',
    question: 'What is the daily traffic per metre?',
    answer: '139.3',
  },
  multiple_choice: {
    task: 'multiple_choice',
    question: 'When did the bridge open?',
    answer: 'B',
    options: { A: '1930', B: '1932', C: '1149', D: '1960' },
  },
};
const spellContext = spell.joinDocuments([{ text: DOCUMENT }, { text: SECOND_DOCUMENT }]);
const spellHistory = [
  { question: 'When did the bridge open?', answer: '1932' },
  { question: 'How long is the bridge?', answer: '1,149 metres' },
];

/** Each prompt by recipe and a file name. */
const PROMPTS: Record<string, Record<string, () => ChatMessage[]>> = {
  spice: {
    'reasoner-qwen': () => spice.reasonerMessages(QUESTION, 'qwen'),
    'reasoner-octothinker': () => spice.reasonerMessages(QUESTION, 'octothinker'),
    'type-selection': () => spice.typeSelectionMessages(DOCUMENT),
    'challenger-mcq': () => spice.mcqChallengerMessages(DOCUMENT),
    'challenger-integer': () => spice.freeFormChallengerMessages(DOCUMENT, 'Integer'),
    'challenger-expression': () => spice.freeFormChallengerMessages(DOCUMENT, 'Expression'),
    'challenger-string': () => spice.freeFormChallengerMessages(DOCUMENT, 'String'),
    'challenger-integer-octothinker': () =>
      spice.freeFormChallengerMessages(DOCUMENT, 'Integer', 'octothinker'),
  },
  spell: {
    ...Object.fromEntries(
      SPELL_TASKS.flatMap((task) => [
        [`questioner-${task}`, () => spell.questionerMessages(task, spellContext, [], 'C')],
        [`questioner-${task}-history`, () => spell.questionerMessages(task, spellContext, spellHistory, 'C')],
        [`responder-${task}`, () => spell.responderMessages(spellQuestions[task], spellContext)],
        [`verifier-${task}`, () => spell.verifierMessages(spellQuestions[task], 'the predicted answer')],
      ]),
    ),
    'responder-general_qa-grounding-probe': () =>
      spell.responderMessages(spellQuestions.general_qa, spell.EMPTY_CONTEXT),
  },
  mae: {
    'proposer-no-reference': () => mae.proposerMessages(undefined),
    'proposer-reference': () => mae.proposerMessages(QUESTION),
    solver: () => mae.solverMessages(QUESTION),
    'judge-answer': () => mae.judgeAnswerMessages(QUESTION, '\\boxed{2}'),
    'judge-question': () => mae.judgeQuestionMessages(QUESTION),
  },
  ssp: {
    proposer: () => ssp.proposerMessages('1932', 3, ['When did the Harbour Bridge open?']),
    solver: () => ssp.solverMessages(QUESTION),
    'rag-verifier': () => ssp.ragVerifierMessages(`${DOCUMENT}\n${SECOND_DOCUMENT}`, QUESTION),
    judge: () => ssp.judgeMessages(QUESTION, '2 years', 'two years'),
  },
  scope: {
    ...Object.fromEntries(
      SCOPE_TASK_TYPES.map((type) => [
        `challenger-${type}`,
        () => scope.challengerMessages(DOCUMENT, type, 2, 'search_tags'),
      ]),
    ),
    'challenger-one-search-qwen3-tools': () =>
      scope.challengerMessages(DOCUMENT, SCOPE_TASK_TYPES[0], 1, 'qwen3_tool_call'),
    'solver-search-tags': () => scope.solverMessages(QUESTION, 4, 'search_tags'),
    'solver-qwen3-tools': () => scope.solverMessages(QUESTION, 4, 'qwen3_tool_call'),
    rubric: () => scope.rubricMessages(SCOPE_TASK_TYPES[0], QUESTION, [DOCUMENT, SECOND_DOCUMENT]),
    grader: () => scope.graderMessages(QUESTION, 'Two years.', 'States that the gap is two years.'),
    identifiability: () => scope.identifiabilityMessages(QUESTION),
    relevance: () => scope.relevanceMessages(DOCUMENT, QUESTION),
  },
};

/** A conversation as a reviewer reads it: each message under a `=== role ===` line. */
const render = (messages: ChatMessage[]): string =>
  messages.map((m) => `=== ${m.role} ===\n${m.content}\n`).join('\n');

describe.each(Object.entries(PROMPTS))('%s prompts', (recipe, prompts) => {
  it.each(Object.keys(prompts))('%s equals its golden file', (name) => {
    const file = path.join(DIR, recipe, `${name}.txt`);
    const text = render(prompts[name]!());
    if (UPDATE) {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, text);
    }
    if (!existsSync(file))
      throw new Error(`no golden file ${file}: run UPDATE_PROMPTS=1 npx jest ${__filename}`);
    expect(text).toBe(readFileSync(file, 'utf8'));
  });
});
