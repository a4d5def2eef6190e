import type { Rng } from '../../../activities/lib/rng';
import { sampleRng, userText, type CallBehaviour, type CompletionContext } from './completion';
import { SPICE_CALLS } from '../../../activities/clients/llm-protocol';
import { ANSWER_TYPES, type AnswerType } from './config';
import { SPELL_BEHAVIOURS } from './spell-behaviour';
import { MAE_BEHAVIOURS } from './mae-behaviour';
import { SSP_BEHAVIOURS } from './ssp-behaviour';
import { SEARCH_DEMO_CALL, searchDemoBehaviour } from './search-agent';
import { EVAL_BEHAVIOURS } from './eval-behaviour';
import { SCOPE_BEHAVIOURS } from './scope-behaviour';
import { composeMcq, composeProblem, mcqText, passRateOf, recogniseTask, type Letter } from './problems';

/**
 * What the scripted model writes, per call kind: one pure function per kind, in one table. Every answer is a
 * function of the prompt, the request seed and the choice index (sha256-seeded), so the same request always
 * gets the same answer and a retried shard sees what the first attempt saw. Adding a recipe's calls is adding
 * entries to BEHAVIOURS.
 */

/** The document inside a challenger or type-selection prompt (the whole prompt when it has no wrapper). */
function documentOf(text: string): string {
  const wrapped = /\[BEGINNING OF THE DOCUMENT\]([\s\S]*?)\[END OF THE DOCUMENT\]/.exec(text);
  if (wrapped) return (wrapped[1] ?? '').trim();
  const labelled = /Document:\n([\s\S]*)/.exec(text);
  return (labelled?.[1] ?? text).trim();
}

/** The free-form prompt's `You must generate a question with answer type: X` (Integer when absent or unknown). */
function requestedType(text: string): AnswerType {
  const asked = /You must generate a question with answer type:\s*([A-Za-z]+)/.exec(text)?.[1];
  return ANSWER_TYPES.find((t) => t === asked) ?? 'Integer';
}

/** A sentence of the document, verbatim, for the quote fields a grounding check compares with the document. */
function quoteFrom(document: string, rng: Rng): string {
  const sentences = document.split(/(?<=[.!?])\s+/).filter((s) => s.trim().length > 0);
  return sentences.length > 0 ? rng.pick(sentences).slice(0, 200) : document.slice(0, 200);
}

function weightedPick(rng: Rng, weights: Record<AnswerType, number>): AnswerType {
  const total = ANSWER_TYPES.reduce((sum, t) => sum + weights[t], 0);
  let u = rng.next() * total;
  for (const t of ANSWER_TYPES) {
    u -= weights[t];
    if (u < 0) return t;
  }
  return 'Integer';
}

const THINKING =
  'Let me find quantities that combine in several steps, harden the question so that the order of ' +
  'operations matters, and check that it stands on its own.\n\n';

const PASSAGE_QUESTION = 'According to the passage, which value does the author arrive at in the end?';

/** The ways a challenger's output goes wrong; a validator must reject each. */
const INVALID_VARIANTS = ['no_json', 'list_answer', 'missing_answer', 'passage_reference'] as const;
type InvalidVariant = (typeof INVALID_VARIANTS)[number];

function invalidVariant(ctx: CompletionContext, rng: Rng): InvalidVariant | undefined {
  return rng.next() < ctx.settings.invalidTaskRate ? rng.pick(INVALID_VARIANTS) : undefined;
}

const NO_JSON = `${THINKING}The material is too simple for a hard question, so I will not write one.`;

function selectType(ctx: CompletionContext): string {
  const rng = sampleRng(ctx, 'type-selection', documentOf(userText(ctx)));
  const mcq = rng.next() < ctx.settings.mcqFraction;
  const type = weightedPick(rng, ctx.settings.answerTypeWeights);
  return JSON.stringify({
    suitable_for_mcq: mcq,
    suitable_for_free_form: !mcq,
    best_answer_type: mcq ? null : type,
    reason: mcq ? 'Linked quantities allow three plausible distractors.' : `One exact ${type} result.`,
  });
}

function writeMcqTask(ctx: CompletionContext): string {
  const document = documentOf(userText(ctx));
  const rng = sampleRng(ctx, 'challenger-mcq', document);
  const variant = invalidVariant(ctx, rng);
  if (variant === 'no_json') return NO_JSON;
  const { problem, options, correct } = composeMcq(rng, document);
  const question = variant === 'passage_reference' ? PASSAGE_QUESTION : problem.statement;
  const letter: Letter | '' = variant === 'missing_answer' ? '' : correct;
  const task = {
    identified_answer: problem.gold,
    answer_quote: [quoteFrom(document, rng)],
    hardening_process: 'Chained two operations so that operator precedence decides the result.',
    exam_question: question,
    correct_answer: problem.gold,
    multiple_choice_question: mcqText(question, options, letter || undefined),
    multiple_choice_correct: variant === 'list_answer' ? [letter] : letter,
    self_test_solution: `Apply precedence: ${problem.body} The result is ${problem.gold}.`,
    knowledge_and_reasoning_steps: 'operator precedence; integer multiplication; addition and subtraction',
    question_difficulty: 'Hard',
  };
  return `${THINKING}${JSON.stringify(task, null, 2)}`;
}

function writeFreeFormTask(ctx: CompletionContext): string {
  const text = userText(ctx);
  const document = documentOf(text);
  const type = requestedType(text);
  const rng = sampleRng(ctx, 'challenger-free-form', type, document);
  const variant = invalidVariant(ctx, rng);
  if (variant === 'no_json') return NO_JSON;
  const problem = composeProblem(type, rng, document);
  const answer = type === 'Integer' ? Number(problem.gold) : problem.gold;
  const task = {
    identified_information: 'Quantities and terms that combine in more than one step.',
    relevant_quotes: [quoteFrom(document, rng)],
    hardening_process: 'Required every step to be carried out exactly.',
    question: variant === 'passage_reference' ? PASSAGE_QUESTION : problem.statement,
    answer: variant === 'list_answer' ? [answer] : variant === 'missing_answer' ? '' : answer,
    answer_type: type,
    step_by_step_solution: `Work out: ${problem.body} This gives ${problem.gold}.`,
    intermediate_results: [problem.gold],
    difficulty_level: 'Hard',
    difficulty_justification: 'Each step must be exact; one slip changes the answer.',
    solving_time_estimate: '2 minutes',
    required_concepts: ['careful step-by-step calculation'],
    potential_errors: ['a slip in one intermediate step'],
  };
  return `${THINKING}${JSON.stringify(task, null, 2)}`;
}

/** Correct with probability p(question): the answer, and the working that precedes it. */
function solve(ctx: CompletionContext): { working: string; answer: string } {
  const task = recogniseTask(userText(ctx));
  if (!task) return { working: 'I cannot find enough information to solve this.', answer: 'no answer' };
  const rng = sampleRng(ctx, 'reasoner', task.statement);
  const correct = rng.next() < passRateOf(task.statement, ctx.settings.passRate);
  const answer = correct ? task.gold : task.wrong(rng);
  return {
    working: `Let me work through this step by step.\nCarrying out each step gives ${answer}.`,
    answer,
  };
}

function reason(ctx: CompletionContext): string {
  const { working, answer } = solve(ctx);
  return `${working}\n\nThe final answer is \\boxed{${answer}}.`;
}

const garbage: CallBehaviour['fault'] = {
  kind: 'garbageContent',
  write: () => 'Sure! I thought about it and would rather describe the question in prose than as JSON.',
};

const SPICE_BEHAVIOURS: Readonly<Record<string, CallBehaviour>> = {
  [SPICE_CALLS.typeSelection]: { answer: selectType, fault: garbage },
  [SPICE_CALLS.mcq]: { answer: writeMcqTask, fault: garbage },
  [SPICE_CALLS.freeForm]: { answer: writeFreeFormTask, fault: garbage },
  [SPICE_CALLS.reason]: {
    answer: reason,
    fault: {
      kind: 'missingBoxed',
      write: (ctx) => {
        const { working, answer } = solve(ctx);
        return `${working}\n\nThe final answer is ${answer}.`;
      },
    },
  },
};

export const BEHAVIOURS: Readonly<Record<string, CallBehaviour>> = {
  ...SPICE_BEHAVIOURS,
  ...SPELL_BEHAVIOURS,
  ...MAE_BEHAVIOURS,
  ...SSP_BEHAVIOURS,
  ...SCOPE_BEHAVIOURS,
  [SEARCH_DEMO_CALL]: searchDemoBehaviour,
  ...EVAL_BEHAVIOURS,
};
