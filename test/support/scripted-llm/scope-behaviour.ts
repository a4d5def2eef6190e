import type { Rng } from '../../../activities/lib/rng';
import { SCOPE_CALLS } from '../../../activities/clients/llm-protocol';
import { sampleRng, userText, type CallBehaviour, type CompletionContext } from './completion';
import { passRateOf } from './problems';
import { searchAgentBehaviour, type SearchAgentStep } from './search-agent';

/**
 * What the scripted model writes for SCOPE's calls (spec scope.md §4), as pure functions of the prompt, the
 * request seed and the choice index:
 * - Challenger: one search per budgeted turn, the first about the source document's subject, each later one
 *   about a titled entity of the previous results, then `<task><question>…</question></task>` naming them.
 *   With probability `invalidTaskRate` it deviates: no task, a generic task (fails source relevance), an
 *   ambiguous one (fails identifiability), one search too many (answered "searches complete"), an empty
 *   search, or a plain `<task>` without `<question>`;
 * - Solver: 0–2 searches about the question, then `<answer>Covers k of 4 facts …</answer>`, each fact found
 *   with probability passRate(question); sometimes no answer at all;
 * - judge: the gates fail exactly the generic and the ambiguous tasks; rubrics are four numbered facts (two,
 *   too few, for some tasks); a grade is 1 iff the answer covers at least the rubric's fact number. Grades
 *   take the `garbageContent` fault: prose without a score.
 */

const GENERIC = 'Write an essay on the importance of teamwork in large projects.';
const AMBIGUOUS = "Summarise the coach's strategy in the final and what the club changed afterwards.";
export const FACTS = 4;

const between = (text: string, open: string, close: string): string => {
  const start = text.indexOf(open);
  if (start < 0) return '';
  const end = text.indexOf(close, start + open.length);
  return text.slice(start + open.length, end < 0 ? undefined : end).trim();
};

/** The subject of a passage: the words before its first " is " or " was ", else its first three words. */
const subjectOf = (text: string): string =>
  /^(.{1,60}?)\s(?:is|was)\s/.exec(text)?.[1] ?? text.split(/\s+/).slice(0, 3).join(' ');

/** The titles of an observation's passages, in rank order. */
const titlesIn = (observation: string): string[] =>
  [...observation.matchAll(/\(Title: "([^"]+)"\)/g)].map((m) => m[1] ?? '');

const DEVIATIONS = ['no_task', 'generic', 'ambiguous', 'overrun', 'empty_search', 'plain_task'] as const;

const challenger = searchAgentBehaviour(({ prompt, rng, request, observations }) => {
  const budget = Number(/exactly \*\*(\d+)\*\* search turn/.exec(prompt)?.[1] ?? '1');
  const source = between(prompt, '<source_document>', '</source_document>');
  const deviation = rng.next() < request.settings.invalidTaskRate ? rng.pick(DEVIATIONS) : undefined;
  const entities = [subjectOf(source)];
  for (let k = 1; k < budget + 1; k++) {
    const seen = titlesIn(observations[k - 1] ?? '');
    entities.push(seen.find((t) => !entities.includes(t)) ?? `${entities[0]} history`);
  }
  const steps: SearchAgentStep[] = entities
    .slice(0, budget)
    .map((e, k) =>
      deviation === 'empty_search' && k === budget - 1
        ? { garbage: '' }
        : { think: `Next: ${e}.`, search: e },
    );
  if (deviation === 'overrun')
    steps.push({ think: 'One more to be sure.', search: `${entities[0]} timeline` });
  const question = `Explain how ${entities.slice(0, budget + 1).join(', ')} are connected, with the dates involved.`;
  const text =
    deviation === 'generic'
      ? GENERIC
      : deviation === 'ambiguous'
        ? AMBIGUOUS
        : deviation === 'plain_task'
          ? question
          : `<question>${question}</question>`;
  return {
    syntax: 'search_tags',
    steps,
    final:
      deviation === 'no_task'
        ? { tag: 'answer', text: 'I could not find enough for a task.' }
        : { tag: 'task', text, think: 'Checklist: every search adds a fact; entities named; no leakage.' },
  };
});

const solver = searchAgentBehaviour(({ prompt, rng, request }) => {
  const question = between(prompt, 'Question:', '\u0000');
  // Capitalised names after the question's first word (its verb).
  const subjects = [...question.slice(1).matchAll(/[A-Z][\w.]*(?: [A-Z][\w.]*)*/g)].map((m) => m[0]);
  const searches = rng.int(3);
  const steps: SearchAgentStep[] = subjects.slice(0, searches).map((s) => ({ search: s }));
  const p = passRateOf(question, request.settings.passRate);
  const found = Array.from({ length: FACTS }, () => rng.next() < p).filter(Boolean).length;
  const silent = rng.next() < request.settings.invalidTaskRate / 4;
  return {
    syntax: 'search_tags',
    steps,
    final: silent
      ? { tag: 'none', text: 'I am not sure.' }
      : { tag: 'answer', text: `Covers ${found} of ${FACTS} facts about the question.` },
  };
});

const verdict = (why: string, score: 0 | 1): string => `<think>${why}</think>\n<score>${score}</score>`;

const taskPrompt = (ctx: CompletionContext): string =>
  between(userText(ctx), '<task_prompt>\n', '\n</task_prompt>');

function identifiability(ctx: CompletionContext): string {
  return taskPrompt(ctx).includes('the coach')
    ? verdict('Which coach and which club? Not identifiable.', 0)
    : verdict('The entities are named.', 1);
}

function relevance(ctx: CompletionContext): string {
  return taskPrompt(ctx).includes('teamwork')
    ? verdict('This could be asked of any document.', 0)
    : verdict('It concerns the document.', 1);
}

function rubrics(ctx: CompletionContext): string {
  const task = taskPrompt(ctx);
  const rng: Rng = sampleRng(ctx, 'scope-rubrics', task);
  const n = rng.next() < ctx.settings.invalidTaskRate / 2 ? 2 : FACTS;
  const items = Array.from(
    { length: n },
    (_, i) =>
      `<rubric priority="${i === 0 ? 'critical' : 'important'}">Identifies fact ${i + 1} of the task.</rubric>`,
  );
  return `<think>Facts from the documents.</think>\n<rubrics>\n${items.join('\n')}\n</rubrics>`;
}

function grade(ctx: CompletionContext): string {
  const text = userText(ctx);
  const needed = Number(
    /Identifies fact (\d+)/.exec(between(text, '<rubric>', '</rubric>'))?.[1] ?? FACTS + 1,
  );
  const covered = Number(/Covers (\d+) of/.exec(between(text, '<response>', '</response>'))?.[1] ?? 0);
  return covered >= needed ? verdict('The response states it.', 1) : verdict('Missing.', 0);
}

export const SCOPE_BEHAVIOURS: Readonly<Record<string, CallBehaviour>> = {
  [SCOPE_CALLS.challenger]: challenger,
  [SCOPE_CALLS.solver]: solver,
  [SCOPE_CALLS.gateIdentifiability]: { answer: identifiability },
  [SCOPE_CALLS.gateRelevance]: { answer: relevance },
  [SCOPE_CALLS.rubrics]: { answer: rubrics },
  [SCOPE_CALLS.grade]: {
    answer: grade,
    fault: { kind: 'garbageContent', write: () => 'The response is decent overall, I suppose.' },
  },
};
