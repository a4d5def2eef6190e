import { EVAL_CALLS, SSP_CALLS } from '../../../activities/clients/llm-protocol';
import { squadNormalize } from '../../../activities/scoring/cover-exact-match';
import { BORN_IN, FOUNDED_BY, bridgeQuestion } from '../../fixtures/ssp/world';
import { sampleRng, userText, type CallBehaviour } from './completion';
import { passRateOf } from './problems';
import { searchAgentBehaviour, type SearchAgentStep } from './search-agent';

/**
 * What the scripted model does for SSP's calls (ssp.md §4), over the fixture world of
 * test/fixtures/ssp (river towns and their founders), reading only what the real retriever returned:
 * - proposer: searches the answer, then its founder, and asks "which river town was founded by the
 *   {profession} who was born in {place} in {year}?"; at `invalidTaskRate` it breaks a rule instead (leaks
 *   the answer, searches once, repeats a query, writes no question) or, as often, asks a vague question
 *   the RAG verifier cannot answer;
 * - RAG verifier: follows the question's clue through the materials (birthplace and year → founder → town);
 *   "unknown" when the chain is not there; the `garbageContent` fault drops the `Answer:` line;
 * - solver: the same chain by search, right with probability passRate(question), sometimes worded "the
 *   town of X" (exact match misses it, the judge does not);
 * - judge: "Correct" when the reference is in the model answer, else "Incorrect" or "Wrong" (the former is
 *   the word a substring test would misread);
 * - agentic evaluation (`eval.search`): the solver's chain, answering whatever town it found.
 */

/** `Doc i (Title: "X") text` lines of observations or materials. */
const docs = (text: string): Array<{ title: string; text: string }> =>
  [...text.matchAll(/Doc \d+ \(Title: "([^"]*)"\) ([^\n]*)/g)].map((m) => ({
    title: m[1] ?? '',
    text: m[2] ?? '',
  }));

/** The clue of a bridge question: profession, birthplace, year. */
const clueOf = (question: string): { profession: string; birthplace: string; born: string } | undefined => {
  const m = /founded by the (\w+) who was born in ([A-Z][a-z]+) in (\d{4})/.exec(question);
  return m ? { profession: m[1] ?? '', birthplace: m[2] ?? '', born: m[3] ?? '' } : undefined;
};

/** Follows birthplace and year to the founder, then the founder to the town, in whatever documents are given. */
function townFor(clue: NonNullable<ReturnType<typeof clueOf>>, text: string): string | undefined {
  const all = docs(text);
  const founder = all
    .map((d) => BORN_IN.exec(d.text))
    .find((m) => m && m[3] === clue.birthplace && m[4] === clue.born)?.[1];
  if (!founder) return undefined;
  return all.find((d) => FOUNDED_BY.exec(d.text)?.[2] === founder)?.title;
}

const INVALID = ['leak', 'one_search', 'repeat', 'no_question', 'vague', 'vague'] as const;

const proposer = searchAgentBehaviour(({ prompt, rng, request, observations }) => {
  const answer = /The answer I provided is: (.*?)\. You need/.exec(prompt)?.[1] ?? 'unknown';
  const invalid = rng.next() < request.settings.invalidTaskRate ? rng.pick(INVALID) : undefined;
  const founded = docs(observations[0] ?? '')
    .map((d) => FOUNDED_BY.exec(d.text))
    .find(Boolean);
  const founder = founded?.[2] ?? 'the founder';
  const born = docs(observations[1] ?? '')
    .map((d) => BORN_IN.exec(d.text))
    .find((m) => m?.[1] === founder);
  let question = born
    ? bridgeQuestion(born[2] ?? '', born[3] ?? '', born[4] ?? '')
    : 'Which river town was founded by a person whose records I could not find?';
  let steps: SearchAgentStep[] = [
    { think: 'I should find what the answer is linked to.', search: answer },
    { think: `The answer was founded by ${founder}; I look for more about them.`, search: founder },
  ];
  if (invalid === 'leak') question = `${question} Hint: it is ${answer}.`;
  if (invalid === 'one_search') steps = steps.slice(0, 1);
  if (invalid === 'repeat') steps = [steps[0] as SearchAgentStep, steps[0] as SearchAgentStep];
  if (invalid === 'no_question') question = '';
  if (invalid === 'vague')
    question = 'Which river town in the old northern region was founded long ago by somebody?';
  return { syntax: 'search_tags', steps, final: { tag: 'question', text: question } };
});

/**
 * The solver's chain for a question: search the clue (birthplace and year) for the founder, then the founder
 * for the town; `town` is what those searches' results hold, undefined when the chain breaks (or there is no
 * clue: one search of the question itself).
 */
function solverChain(
  question: string,
  observations: string[],
): { steps: SearchAgentStep[]; town: string | undefined; wrong: string | undefined } {
  const clue = clueOf(question);
  if (!clue) return { steps: [{ search: question }], town: undefined, wrong: undefined };
  const founder = docs(observations[0] ?? '')
    .map((d) => BORN_IN.exec(d.text))
    .find((m) => m?.[3] === clue.birthplace && m[4] === clue.born)?.[1];
  const town = townFor(clue, observations.join('\n'));
  const wrong = docs(observations.join('\n')).find((d) => d.title !== town && FOUNDED_BY.test(d.text))?.title;
  const steps = [
    { search: `${clue.profession} born in ${clue.birthplace} in ${clue.born}` },
    { search: `founded by the ${clue.profession} ${founder ?? ''}`.trim() },
  ];
  return { steps, town, wrong };
}

const questionOf = (prompt: string): string => /Question: (.*)$/s.exec(prompt)?.[1]?.trim() ?? prompt;

const solver = searchAgentBehaviour(({ prompt, rng, request, observations }) => {
  const question = questionOf(prompt);
  const { steps, town, wrong } = solverChain(question, observations);
  const right = rng.next() < passRateOf(question, request.settings.passRate);
  const paraphrase = rng.next() < 0.2;
  const text = right && town ? (paraphrase ? `the town of ${town}` : town) : (wrong ?? 'Unknown Town');
  return {
    syntax: 'search_tags',
    steps,
    final: { tag: 'answer', text: clueOf(question) ? text : 'unknown' },
  };
});

/**
 * Agentic held-out evaluation (`evaluation.rollout: "search"`) over the same world: the solver's chain,
 * answering the town its searches found, so its accuracy is the share of questions the search tool lets it
 * answer (a tool returning the wrong passages gives "unknown").
 */
const searchEval = searchAgentBehaviour(({ prompt, observations }) => {
  const { steps, town } = solverChain(questionOf(prompt), observations);
  return { syntax: 'search_tags', steps, final: { tag: 'answer', text: town ?? 'unknown' } };
});

const ragVerifier: CallBehaviour = {
  answer: (ctx) => {
    const text = userText(ctx);
    const question = /\nQuestion: (.*)$/s.exec(text)?.[1]?.trim() ?? '';
    const clue = clueOf(question);
    const town = clue ? townFor(clue, text) : undefined;
    return town
      ? `The clue leads to the founder, whose town is named in the materials.\nAnswer: ${town}`
      : 'The materials do not identify it.\nAnswer: unknown';
  },
  fault: { kind: 'garbageContent', write: () => 'I would rather not answer from these materials.' },
};

const judge: CallBehaviour = {
  answer: (ctx) => {
    const text = userText(ctx);
    const model = squadNormalize(/Model Answer: (.*)/.exec(text)?.[1] ?? '');
    const reference = squadNormalize(/Reference Answer: (.*)/.exec(text)?.[1] ?? '');
    if (reference !== '' && model.includes(reference)) return 'Correct';
    return sampleRng(ctx, 'ssp-judge', text).next() < 0.5 ? 'Incorrect' : 'Wrong';
  },
  fault: { kind: 'garbageContent', write: () => 'It is hard to say.' },
};

export const SSP_BEHAVIOURS: Readonly<Record<string, CallBehaviour>> = {
  [SSP_CALLS.proposer]: proposer,
  [SSP_CALLS.ragVerifier]: ragVerifier,
  [SSP_CALLS.verificationJudge]: judge,
  [SSP_CALLS.solver]: solver,
  [SSP_CALLS.judge]: judge,
  [EVAL_CALLS.search]: searchEval,
};
