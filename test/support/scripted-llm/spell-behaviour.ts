import type { Rng } from '../../../activities/lib/rng';
import { sampleRng, userText, type CallBehaviour, type CompletionContext } from './completion';
import { SPELL_CALLS } from '../../../activities/clients/llm-protocol';
import { passRateOf } from './problems';

/**
 * What the scripted model writes for SPELL's calls, over company profiles such as the clusters fixture's
 * (`X is headquartered in C. In fiscal Y, X reported revenue of R million dollars and operating costs of K
 * million dollars.`). Every answer is a function of the prompt, the request seed and the choice index, so a
 * restarted server answers the same:
 * - questioner: a JSON question about the profiles in its `<text>` block (general QA: the city of the company
 *   with a given revenue; financial math and MC: the combined operating profit of two companies, MC with
 *   the answer at the requested letter). With probability `invalidTaskRate` the output is broken (no JSON,
 *   no answer: a format error; an unclosed `<think>`: discarded); with probability `ungroundedRate` the
 *   question states the profiles it needs, so it can be answered without the documents;
 * - responder and grounding probe: the answer computed from the profiles in the prompt (documents or
 *   question), right with probability passRate(question) per sample, in the prompt's "The correct answer
 *   is …" / "Therefore, the answer is …" format (sometimes in raw dollars, sometimes with no answer phrase
 *   at all); without the facts, a guess;
 * - verifier: `Explanation: … Decision: [[YES]]/[[NO]]` from its own comparison of the two answers, flipped
 *   for 10% of samples and malformed (no decision) for 8%.
 */

interface Profile {
  name: string;
  city: string;
  year: number;
  revenue: number;
  costs: number;
  /** The two sentences that state it, verbatim. */
  sentences: string;
}

const PROFILE =
  /([A-Z][a-z]+ [A-Z][a-z]+) is headquartered in ([A-Z][a-z]+)\. In fiscal (\d{4}), \1 reported revenue of ([\d.]+) million dollars and operating costs of ([\d.]+) million dollars\./g;

function profilesIn(text: string): Profile[] {
  return [...text.matchAll(PROFILE)].map((m) => ({
    name: m[1] ?? '',
    city: m[2] ?? '',
    year: Number(m[3]),
    revenue: Number(m[4]),
    costs: Number(m[5]),
    sentences: m[0],
  }));
}

/** One completion's random stream, apart from the other recipes' streams. */
const stream = (ctx: CompletionContext, ...parts: string[]): Rng => sampleRng(ctx, 'spell', ...parts);

/** The documents of a prompt: its `<text>` block (the templates' own mentions of `<text>` have no newline). */
const documentsOf = (prompt: string): string => /<text>\n([\s\S]*?)\n<\/text>/.exec(prompt)?.[1] ?? '';

const round1 = (x: number): number => Math.round(x * 10) / 10;
const profit = (p: Profile): number => p.revenue - p.costs;
const hqQuestion = (p: Profile): string =>
  `Where is the headquarters of the company that reported revenue of ${p.revenue} million dollars in fiscal ${p.year}?`;
const profitQuestion = (a: Profile, b: Profile): string =>
  `What is the combined operating profit, in millions of dollars, of ${a.name} and ${b.name}?`;
const LETTERS = ['A', 'B', 'C', 'D'] as const;

// ---------------------------------------------------------------------------------------------------------
// Questioner

type Task = 'general_qa' | 'financial_math' | 'multiple_choice';

const taskOf = (prompt: string): Task =>
  prompt.includes('"options": {')
    ? 'multiple_choice'
    : prompt.includes('A single, non-zero numerical answer')
      ? 'financial_math'
      : 'general_qa';

const THINK = '<think>I will link facts from different documents so that one lookup is not enough.</think>\n';

function writeQuestion(ctx: CompletionContext): string {
  const prompt = userText(ctx);
  const rng = stream(ctx, 'questioner', prompt);
  const task = taskOf(prompt);
  if (rng.next() < ctx.settings.invalidTaskRate) {
    switch (rng.pick(['no_json', 'missing_answer', 'unclosed_think'] as const)) {
      case 'no_json':
        return `${THINK}These documents are too thin for a hard question.`;
      case 'missing_answer':
        return `${THINK}\`\`\`json\n{"question": "What is the combined revenue of every company?"}\n\`\`\``;
      case 'unclosed_think':
        return '<think>Let me compare the companies one by one, starting with the first report and';
    }
  }
  const profiles = profilesIn(documentsOf(prompt));
  if (profiles.length < 2) return `${THINK}I need at least two company reports to write a question.`;
  const asked = new Set([...prompt.matchAll(/^Question: (.+)$/gm)].map((m) => m[1]));
  let [a, b] = rng.sample(profiles, 2) as [Profile, Profile];
  for (
    let tries = 0;
    tries < 5 && asked.has(task === 'general_qa' ? hqQuestion(a) : profitQuestion(a, b));
    tries++
  )
    [a, b] = rng.sample(profiles, 2) as [Profile, Profile];
  // An ungrounded question carries the facts it needs: the grounding probe must catch it.
  const preamble = rng.next() < ctx.settings.ungroundedRate ? `${a.sentences} ${b.sentences} ` : '';
  const gold = round1(profit(a) + profit(b));
  const json =
    task === 'general_qa'
      ? { question: `${preamble}${hqQuestion(a)}`, answer: a.city }
      : task === 'financial_math'
        ? { question: `${preamble}${profitQuestion(a, b)}`, answer: String(gold) }
        : mcQuestion(`${preamble}${profitQuestion(a, b)}`, gold, a, b, prompt);
  return `${THINK}Both reports are needed for this question.\n\n\`\`\`json\n${JSON.stringify(json, null, 2)}\n\`\`\``;
}

/** The gold at the letter the prompt asks for, three distinct wrong values (errors a reader could make) around it. */
function mcQuestion(question: string, gold: number, a: Profile, b: Profile, prompt: string) {
  const letter = /The correct answer must be `([A-D])`/.exec(prompt)?.[1] ?? 'A';
  const values = new Set([gold]);
  for (const v of [a.revenue + b.revenue, gold * 1.1, profit(a), gold + 7, gold - 7]) {
    if (values.size < LETTERS.length) values.add(round1(v));
  }
  const wrong = [...values].slice(1);
  const options = Object.fromEntries(
    LETTERS.map((l) => [l, String(l === letter ? gold : wrong.shift())]),
  ) as Record<string, string>;
  return { question, options, answer: letter };
}

// ---------------------------------------------------------------------------------------------------------
// Responder (and the grounding probe, which is the responder without documents)

/** The question and its gold from the facts in the prompt (documents or the question itself), if any. */
function solveFromPrompt(prompt: string): { question: string; gold?: string; options: string[] } {
  const question =
    /^Question: (?:What is the correct answer to this question: )?(.+)$/m.exec(prompt)?.[1] ?? '';
  const facts = [...profilesIn(documentsOf(prompt)), ...profilesIn(question)];
  const options = [...prompt.matchAll(/^\(([A-D])\) (.+)$/gm)].map((m) => m[2] ?? '');
  const hq = /reported revenue of ([\d.]+) million dollars in fiscal (\d{4})\?$/.exec(question);
  if (hq) {
    const p = facts.find((f) => f.revenue === Number(hq[1]) && f.year === Number(hq[2]));
    return { question, options, ...(p ? { gold: p.city } : {}) };
  }
  const sum = /combined operating profit, in millions of dollars, of (.+) and (.+)\?$/.exec(question);
  const [a, b] = [facts.find((f) => f.name === sum?.[1]), facts.find((f) => f.name === sum?.[2])];
  if (!a || !b) return { question, options };
  const value = round1(profit(a) + profit(b));
  if (options.length === 0) return { question, options, gold: String(value) };
  const at = options.findIndex((o) => Number(o) === value);
  return { question, options, ...(at >= 0 ? { gold: LETTERS[at] } : {}) };
}

function respond(ctx: CompletionContext): string {
  const prompt = userText(ctx);
  const numeric = prompt.includes('Therefore, the answer is');
  const { question, gold, options } = solveFromPrompt(prompt);
  const rng = stream(ctx, 'responder', prompt);
  const right = gold !== undefined && rng.next() < passRateOf(question, ctx.settings.passRate);
  let answer: string;
  if (options.length > 0) answer = right && gold ? gold : rng.pick(LETTERS.filter((l) => l !== gold));
  else if (numeric) answer = right && gold ? gold : String(round1(Number(gold ?? 500) + 1 + rng.int(40)));
  else answer = right && gold ? gold : rng.pick(['Velmont', 'Arbrook', 'Quinsey', 'Oakfield']);

  const style = rng.next();
  if (style < 0.05) return `I believe it is ${answer}, though the reports are hard to read.`;
  if (options.length > 0)
    return `Comparing each option with the reports.\nThe correct answer is (${answer}).`;
  if (numeric) {
    // A fifth of the numeric answers come in dollars rather than millions: a scale the rule accepts.
    const stated = style < 0.25 ? String(Math.round(Number(answer) * 1e6)) : answer;
    return `Step 1: find each company's revenue and costs.\nStep 2: add the two profits.\nTherefore, the answer is ${stated}.`;
  }
  return style < 0.35 ? `The correct answer is (the city of ${answer}).` : `The correct answer is ${answer}.`;
}

// ---------------------------------------------------------------------------------------------------------
// Verifier

function equivalent(first: string, second: string): boolean {
  if (/^[A-D]$/.test(second)) return /\b([A-D])\b/.exec(first)?.[1] === second;
  const [x, y] = [Number(first.replace(/,/g, '')), Number(second.replace(/,/g, ''))];
  if (Number.isFinite(x) && Number.isFinite(y) && y !== 0)
    return [1, 1e2, 1e3, 1e6, 1e9, 1e-2, 1e-3, 1e-6, 1e-9].some(
      (s) => Math.abs(x * s - y) <= 0.0015 * Math.abs(y),
    );
  const norm = (t: string): string =>
    t
      .toLowerCase()
      .replace(/[^a-z0-9 ]/g, '')
      .trim();
  return norm(second) !== '' && norm(first).includes(norm(second));
}

function verify(ctx: CompletionContext): string {
  const prompt = userText(ctx);
  const first = /^- Answer 1: (.*)$/m.exec(prompt)?.[1] ?? '';
  const second = /^- Answer 2: (.*)$/m.exec(prompt)?.[1] ?? '';
  const same = equivalent(first, second);
  const u = stream(ctx, 'verifier', prompt).next();
  if (u < 0.08)
    return `Explanation: Answer 1 is "${first}" and Answer 2 is "${second}".\nDecision: hard to say.`;
  const decision = u < 0.18 ? !same : same;
  return `Explanation: Answer 1 (${first}) ${same ? 'states the same as' : 'differs from'} Answer 2 (${second}).\nDecision: ${decision ? '[[YES]]' : '[[NO]]'}`;
}

const garbage: CallBehaviour['fault'] = {
  kind: 'garbageContent',
  write: () => 'I would rather discuss the documents in general terms than commit to anything.',
};

export const SPELL_BEHAVIOURS: Readonly<Record<string, CallBehaviour>> = {
  [SPELL_CALLS.questioner]: { answer: writeQuestion, fault: garbage },
  [SPELL_CALLS.grounding]: { answer: respond },
  [SPELL_CALLS.responder]: { answer: respond, fault: garbage },
  [SPELL_CALLS.verifier]: { answer: verify, fault: garbage },
};
