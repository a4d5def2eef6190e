/**
 * SCOPE's frozen judge for the search world (ssp-world.ts), by rule instead of by model: it reads SCOPE's own
 * judge prompts (prompts.ts: the two quality gates, the rubric writer, the per-rubric grader), so the recipe
 * renders and parses them exactly as it would for a model, and answers each from the world's facts ("Belawick
 * was founded by Corenric.", "Corenric was born in Halormoor."):
 * - identifiability: 1 iff the task names an entity of the world (a name no document states is ambiguous);
 * - relevance: 1 iff the task names an entity its source document states a fact about;
 * - rubrics: one per fact the task asks for among the facts of the context documents about an entity the task
 *   names, or about an entity such a fact links to (a town's founder, then the founder's birthplace),
 *   "Identifies Corenric as the founder of Belawick."; none (an empty block, which the recipe drops) when no
 *   document states one. A task asks for a relation by its words (`ASKED`): "which person founded" the
 *   founder, "born" the birthplace; a fact reached only on the way ("Where was the person who founded X
 *   born?" reaches the founder) gets no rubric, as a writer of rubrics for what the task asks would give it
 *   none; a task whose words ask for neither gets every fact reached;
 * - grade: 1 iff the response names the rubric's answer and no other entity of its kind (a list of every
 *   person does not pass "Identifies Corenric as the founder").
 * `random` grades each rubric 1 or 0 by a hash of the request instead (the control: rubrics that no longer
 * depend on the answer), keeping the rule's gates and rubrics so the same tasks reach the Solver.
 */
import { SCOPE_CALLS } from '../../activities/clients/llm-protocol';
import { seededRng } from '../../activities/lib/rng';

export const SCOPE_GRADER_MODES = ['rule', 'random'] as const;
export type ScopeGraderMode = (typeof SCOPE_GRADER_MODES)[number];

/** Kinds of the world's entities: a fact's subject and object kinds follow from its relation. */
type Kind = 'town' | 'person' | 'place';

interface Fact {
  subject: string;
  relation: 'founder' | 'birthplace';
  object: string;
}

const FACT_PATTERNS: ReadonlyArray<{ pattern: RegExp; relation: Fact['relation']; kinds: [Kind, Kind] }> = [
  {
    pattern: /\b([A-Z][a-z]+) was founded by ([A-Z][a-z]+)\./g,
    relation: 'founder',
    kinds: ['town', 'person'],
  },
  {
    pattern: /\b([A-Z][a-z]+) was born in ([A-Z][a-z]+)\./g,
    relation: 'birthplace',
    kinds: ['person', 'place'],
  },
];

/** Every fact a text states, in order. */
function factsIn(text: string): Fact[] {
  return FACT_PATTERNS.flatMap(({ pattern, relation }) =>
    [...text.matchAll(pattern)].map((m) => ({ subject: m[1] ?? '', relation, object: m[2] ?? '' })),
  );
}

/**
 * The words by which a task asks for a relation's object: "which person founded" or "who founded" the founder
 * ("the person who founded X" describes the way to another fact, not the founder asked), "born" the birthplace.
 */
const ASKED: Record<Fact['relation'], RegExp> = {
  founder: /\b(?:which person|(?<!person )who) founded\b/i,
  birthplace: /\bborn\b/,
};

/** The relations a task asks for; both when its words ask for neither. */
function askedRelations(task: string): Set<Fact['relation']> {
  const relations = Object.keys(ASKED) as Array<Fact['relation']>;
  const asked = relations.filter((r) => ASKED[r].test(task));
  return new Set(asked.length > 0 ? asked : relations);
}

const RUBRIC = /^Identifies ([A-Z][a-z]+) as the (founder|birthplace) of ([A-Z][a-z]+)\.$/;
const rubricOf = (f: Fact): string => `Identifies ${f.object} as the ${f.relation} of ${f.subject}.`;

/** The names (capitalised words) a text contains. */
const namesIn = (text: string): Set<string> => new Set(text.match(/\b[A-Z][a-z]+\b/g) ?? []);

/** The text between the first `open` and the next `close` (prompts.ts's tags); empty when absent. */
function between(text: string, open: string, close: string): string {
  const start = text.indexOf(open);
  if (start < 0) return '';
  const end = text.indexOf(close, start + open.length);
  return text.slice(start + open.length, end < 0 ? undefined : end).trim();
}

const verdict = (why: string, score: 0 | 1): string => `<think>${why}</think>\n<score>${score}</score>`;

/** The world's entities by kind, from its corpus (every document's text). */
export interface ScopeGraderWorld {
  documents: ReadonlyArray<{ text: string }>;
}

export interface ScopeGrader {
  /** The judge's reply to one SCOPE judge call (a `SCOPE_CALLS` value), from its user text and request seed. */
  answer(call: string, userText: string, seed: number | undefined): string;
  /** The judge calls it answers. */
  calls: readonly string[];
}

export function scopeGrader(world: ScopeGraderWorld, mode: ScopeGraderMode): ScopeGrader {
  const kinds = new Map<string, Kind>();
  for (const { text } of world.documents)
    for (const {
      pattern,
      kinds: [s, o],
    } of FACT_PATTERNS)
      for (const m of text.matchAll(pattern)) {
        kinds.set(m[1] ?? '', s);
        kinds.set(m[2] ?? '', o);
      }
  const entitiesIn = (text: string): string[] => [...namesIn(text)].filter((n) => kinds.has(n));

  const identifiability = (user: string): string => {
    const named = entitiesIn(between(user, '<task_prompt>\n', '\n</task_prompt>'));
    return named.length > 0
      ? verdict(`The task names ${named.join(', ')}.`, 1)
      : verdict('The task names no entity a researcher could look up.', 0);
  };

  const relevance = (user: string): string => {
    const source = between(user, '<source_document>\n', '\n</source_document>');
    const task = new Set(entitiesIn(between(user, '<task_prompt>\n', '\n</task_prompt>')));
    const shared = entitiesIn(source).filter((e) => task.has(e));
    return shared.length > 0
      ? verdict(`Both concern ${shared.join(', ')}.`, 1)
      : verdict('The task names nothing of the source document.', 0);
  };

  const rubrics = (user: string): string => {
    const task = between(user, '<task_prompt>\n', '\n</task_prompt>');
    const documents = between(user, '## Context Documents', '## Requirements');
    const asked = askedRelations(task);
    const items = reachableFacts(factsIn(documents), entitiesIn(task))
      .filter((f) => asked.has(f.relation))
      .map((f, i) => `<rubric priority="${i === 0 ? 'critical' : 'important'}">${rubricOf(f)}</rubric>`);
    return `<think>Facts of the documents about the task's entities.</think>\n<rubrics>\n${items.join('\n')}\n</rubrics>`;
  };

  const grade = (user: string, seed: number | undefined): string => {
    const response = between(user, '<response>\n', '\n</response>');
    const rubric = between(user, '<rubric>\n', '\n</rubric>');
    if (mode === 'random') {
      const bit = seededRng('scope-grader', seed ?? 'no-seed', rubric, response).next() < 0.5 ? 1 : 0;
      return verdict('Graded at random (the control).', bit);
    }
    const wanted = RUBRIC.exec(rubric)?.[1];
    if (wanted === undefined) return verdict('The rubric is not one of the world’s facts.', 0);
    const kind = kinds.get(wanted);
    const named = entitiesIn(response).filter((e) => kinds.get(e) === kind);
    if (!named.includes(wanted)) return verdict(`The response does not name ${wanted}.`, 0);
    if (named.length > 1) return verdict(`The response also names ${named.join(', ')}.`, 0);
    return verdict(`The response names ${wanted}.`, 1);
  };

  const answers: Record<string, (user: string, seed: number | undefined) => string> = {
    [SCOPE_CALLS.gateIdentifiability]: identifiability,
    [SCOPE_CALLS.gateRelevance]: relevance,
    [SCOPE_CALLS.rubrics]: rubrics,
    [SCOPE_CALLS.grade]: grade,
  };
  return {
    calls: Object.keys(answers),
    answer: (call, user, seed) => {
      const answer = answers[call];
      if (!answer)
        throw new Error(`the SCOPE grader answers ${Object.keys(answers).join(', ')}, not "${call}"`);
      return answer(user, seed);
    },
  };
}

/**
 * The facts about `entities`, then about the entities those facts link to, and so on: a town's founder and
 * the founder's birthplace, each once, in the order they are reached.
 */
function reachableFacts(facts: readonly Fact[], entities: readonly string[]): Fact[] {
  const out: Fact[] = [];
  const frontier = [...entities];
  const seen = new Set(frontier);
  for (let e = frontier.shift(); e !== undefined; e = frontier.shift()) {
    for (const f of facts.filter((x) => x.subject === e)) {
      if (out.some((x) => rubricOf(x) === rubricOf(f))) continue;
      out.push(f);
      if (!seen.has(f.object)) {
        seen.add(f.object);
        frontier.push(f.object);
      }
    }
  }
  return out;
}
