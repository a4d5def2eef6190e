import type { ChatMessage } from '../../clients/trainer-contract';
import type { SearchSyntax } from '../../tools/types';
import { CALL_EXAMPLE } from '../../tools/search-syntax';
import type { ScopeTaskType } from '../../../config/presets/scope';

/**
 * SCOPE's prompt templates (scope.md §4, App. H), paraphrased from the paper's descriptions. The gates'
 * few-shot examples are omitted by the paper, so the ones here are this project's own. Documents, tasks and
 * responses are untrusted text and are placed inside delimiting tags, never spliced into instructions.
 */

/** What the environment answers a search past the Challenger's budget (§1 step 2). */
export const SEARCHES_COMPLETE = 'searches complete';

const TASK_TYPE_NAMES: Record<ScopeTaskType, string> = {
  long_form_qa: 'Long-form QA',
  summarisation: 'Summarisation',
  planning: 'Planning',
  writing: 'Writing',
};

const TASK_TYPE_DESCRIPTIONS: Record<ScopeTaskType, string> = {
  long_form_qa:
    'A single how/what/why question about ONE topic that needs an explained, multi-paragraph answer.',
  summarisation: 'Condense or transform source content into a structured summary for a stated audience.',
  planning: 'An actionable plan with concrete steps, timelines or milestones.',
  writing: 'A formal document with an introduction, a body and a conclusion; it may need citations.',
};

/** The Challenger's prompt (App. H): source document, task type, exactly `budget` search turns, then a task. */
export function challengerMessages(
  document: string,
  taskType: ScopeTaskType,
  budget: number,
  syntax: SearchSyntax,
): ChatMessage[] {
  const turns = budget === 1 ? '1** search turn' : `${budget}** search turns`;
  const user = [
    'Generate a challenging long-form task using the source document and retrieved information.',
    '',
    '## Source Document',
    '<source_document>',
    document,
    '</source_document>',
    '',
    '## Task Type',
    `**${TASK_TYPE_NAMES[taskType]}**: ${TASK_TYPE_DESCRIPTIONS[taskType]}`,
    '',
    '## Instructions',
    `You will use exactly **${turns}. The first search is about an entity in the source document; each later`,
    'search must be about ONE specific entity that appears by name in the PREVIOUS search results. The task',
    'must need unique facts from ALL search turns, not only from the source document.',
    '',
    `Search turn: <think>why this search</think>${CALL_EXAMPLE[syntax]}`,
    'Results come back between <information> and </information>. After your last search the environment',
    `answers "${SEARCHES_COMPLETE}".`,
    '',
    'Final turn: <think> with this checklist: each search adds a fact that is not in the source; all facts are',
    'needed; every entity is identifiable by name and acronyms are expanded; the task does not leak the answer;',
    'answering needs retrieval; the output format is specified; English only. </think>',
    'Then the task: <task><question>the task for the solver</question></task>',
    'The task must withhold searchable information: name what to find, never the facts themselves.',
  ].join('\n');
  return [{ role: 'user', content: user }];
}

/** The Solver's prompt (Search-R1 style, App. H); the paper's {budget_instructions} is [U]: none. */
export function solverMessages(question: string, maxSearches: number, syntax: SearchSyntax): ChatMessage[] {
  const user = [
    'Answer the given question. You must conduct reasoning inside <think> and </think> first every time you',
    'get new information. After reasoning, if you find you lack some knowledge, you can call a search engine by',
    `${CALL_EXAMPLE[syntax]} and it will return the top searched results between <information> and`,
    `</information>. You can search up to ${maxSearches} times. If you find no further external knowledge is`,
    'needed, you can directly provide the answer inside <answer> and </answer>, without detailed illustrations.',
    'For example, <answer> Beijing </answer>.',
    '',
    `Question: ${question}`,
  ].join('\n');
  return [{ role: 'user', content: user }];
}

/** The rubric writer (App. H): 3–5 positive, one-sentence, discriminative rubrics from the task and documents. */
export function rubricMessages(
  taskType: ScopeTaskType,
  question: string,
  documents: readonly string[],
): ChatMessage[] {
  const user = [
    'Write **3-5 positive rubrics** for grading responses to the task below.',
    '',
    '## Task Type',
    TASK_TYPE_NAMES[taskType],
    '',
    '## Task Prompt',
    '<task_prompt>',
    question,
    '</task_prompt>',
    '',
    '## Context Documents',
    ...documents.map((d, i) => `<document index="${i + 1}">\n${d}\n</document>`),
    '',
    '## Requirements',
    '- Each rubric is one sentence of at most about 25 words, not compound, and starts with a command verb',
    '  (Addresses, Demonstrates, Provides, Incorporates, Synthesises, Identifies, Explains, Compares,',
    '  Evaluates, Integrates, Supports, Applies).',
    '- Each rubric names specific dates, amounts or entities from the context documents.',
    '- Discriminative check: a generic on-topic answer must FAIL each rubric; only a response that found the',
    '  right facts passes it.',
    '- Give each rubric a priority: critical, important or bonus.',
    '',
    'Output format:',
    '<rubrics>',
    '<rubric priority="critical">…</rubric>',
    '<rubric priority="important">…</rubric>',
    '<rubric priority="bonus">…</rubric>',
    '</rubrics>',
  ].join('\n');
  return [{ role: 'user', content: user }];
}

/** The grader (App. H): one SINGLE rubric, strictly, 0 or 1. */
export function graderMessages(question: string, response: string, rubric: string): ChatMessage[] {
  const user = [
    'You are grading a response against a SINGLE rubric. Be strict.',
    '',
    `<prompt>\n${question}\n</prompt>`,
    `<response>\n${response}\n</response>`,
    `<rubric>\n${rubric}\n</rubric>`,
    '',
    'Score 1 if the response fully meets the rubric; score 0 otherwise, including a refusal or a partial',
    'answer. When in doubt, score 0. Partial credit does not exist.',
    'Output your reasoning inside <think></think>, then <score>0</score> or <score>1</score>. Output NOTHING else.',
  ].join('\n');
  return [{ role: 'user', content: user }];
}

const GATE_OUTPUT =
  'Output your reasoning inside <think></think>, then <score>0</score> or <score>1</score>.';

/** Quality gate 1 (App. H): can a researcher identify every central entity from the task alone? */
export function identifiabilityMessages(question: string): ChatMessage[] {
  const user = [
    'Decide whether the central entities of a task are identifiable. Score 1 if a researcher could find the',
    "right person, place, work, or concept from what's written. Score 0 only if a central entity is genuinely",
    'ambiguous. Context resolves ambiguity.',
    'Fail cases: a name with no context, an obscure acronym that is not expanded, generic references such as',
    '"the coach" or "the company".',
    '',
    'Examples:',
    '<task_prompt>Explain how the 1998 Good Friday Agreement changed policing in Northern Ireland.</task_prompt>',
    '<think>The agreement is named and dated; the place is explicit.</think><score>1</score>',
    "<task_prompt>Summarise the coach's strategy in the final and what the club changed afterwards.</task_prompt>",
    '<think>Which coach, which final, which club? Nothing identifies them.</think><score>0</score>',
    '<task_prompt>Plan a replication of the MRT results on a smaller budget.</task_prompt>',
    '<think>MRT is an unexpanded acronym with no field given; it cannot be looked up.</think><score>0</score>',
    '',
    `<task_prompt>\n${question}\n</task_prompt>`,
    GATE_OUTPUT,
  ].join('\n');
  return [{ role: 'user', content: user }];
}

/** Quality gate 2 (App. H): is the task topically related to its source document? */
export function relevanceMessages(document: string, question: string): ChatMessage[] {
  const user = [
    'You are a strict binary grader. Score 1 if the task is topically related to the source document (it need',
    'not be answerable from the document alone). Generic or vague tasks that could apply to any document',
    'should score 0.',
    '',
    'Examples:',
    '<source_document>The Hoover Dam was built between 1931 and 1936 on the Colorado River…</source_document>',
    '<task_prompt>Compare the construction costs of the Hoover Dam and the Grand Coulee Dam.</task_prompt>',
    '<think>Both concern the dam in the document.</think><score>1</score>',
    '<source_document>The Hoover Dam was built between 1931 and 1936 on the Colorado River…</source_document>',
    '<task_prompt>Write an essay on the importance of teamwork in large projects.</task_prompt>',
    '<think>This could be asked of any document.</think><score>0</score>',
    '',
    `<source_document>\n${document}\n</source_document>`,
    `<task_prompt>\n${question}\n</task_prompt>`,
    GATE_OUTPUT,
  ].join('\n');
  return [{ role: 'user', content: user }];
}
