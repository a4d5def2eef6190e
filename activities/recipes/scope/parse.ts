/**
 * Parsing SCOPE's model outputs (scope.md §2, §4). Every output is untrusted text: each parser returns a
 * checked value or nothing, and never throws. `<think>` blocks are removed before looking for a result tag,
 * so reasoning that drafts or quotes a tag is not taken for the result.
 */
import { tagContents, withoutThink } from '../../scoring/tags';

/** The last non-empty content of `tag` outside `<think>`. */
function lastContent(text: string, tag: string): string | undefined {
  return tagContents(withoutThink(text), tag)
    .filter((c) => c !== '')
    .at(-1);
}

/**
 * The Challenger's task from its final turn (§2 "structure", [!]): a `<task>` whose `<question>`
 * sub-element is the question, or, as Fig. 9 shows, a plain `<task>…</task>` whose body is the question.
 * Undefined when the final turn has no non-empty `<task>` (or a `<task>` with only empty `<question>`s).
 */
export function parseTask(finalTurn: string): string | undefined {
  const body = lastContent(finalTurn, 'task');
  if (body === undefined) return undefined;
  if (!/<question>/i.test(body)) return body;
  return lastContent(body, 'question');
}

/** The Solver's answer: the last non-empty `<answer>` of its final turn, or null (§2: F's answer part). */
export function extractAnswer(finalTurn: string): string | null {
  return lastContent(finalTurn, 'answer') ?? null;
}

const RUBRICS_BLOCK = /<rubrics>([\s\S]*?)<\/rubrics>/gi;
const RUBRIC = /<rubric\b[^>]*>([\s\S]*?)<\/rubric>/gi;

/**
 * The judge's rubrics (§4): the criteria of the last closed `<rubrics>` block, whitespace collapsed, empty
 * ones dropped, cut to `max`. Fewer than `min` is no rubric set at all (§7: malformed blocks are dropped),
 * so a task is never graded against one or two criteria that any on-topic answer passes. The priority
 * attribute is read by nobody: the weights are uniform (Eq. 1).
 */
export function parseRubrics(text: string, limits: { min: number; max: number }): string[] {
  const block = [...withoutThink(text).matchAll(RUBRICS_BLOCK)].at(-1)?.[1];
  if (block === undefined) return [];
  const items = [...block.matchAll(RUBRIC)]
    .map((m) => (m[1] ?? '').replace(/\s+/g, ' ').trim())
    .filter((r) => r !== '');
  return items.length < limits.min ? [] : items.slice(0, limits.max);
}
