import { seededRng, type Rng } from '../../../activities/lib/rng';
import type { SearchSyntax } from '../../../activities/tools/types';
import { sampleRng, userText, type CallBehaviour, type CompletionContext } from './completion';
import { passRateOf } from './problems';

/**
 * A scripted search agent for multi-turn rollouts (SSP, SCOPE): a test says what one trajectory does
 * ("think, search q1, search q2, answer X", with garbage calls where it wants them) and the behaviour plays
 * it turn by turn. Each request continues the trajectory so far (`continue_final_message`), and the turn is
 * the number of `<information>` observations in it, so the agent writes the next step and nothing else.
 *
 * The loop sends every turn with a new seed, but a trajectory must keep one plan: the first turn draws a
 * plan id from its own request (prompt, seed, choice index) and writes it into its first `<think>`, and
 * every later turn reads it back from the continued text, as a model follows its own earlier reasoning.
 * `rng` is seeded by that id, so a script may use it for correctness and still be the same on every turn.
 */

export type SearchAgentStep =
  | { think?: string; search: string }
  /** A call whose body is `garbage` verbatim (e.g. '' for an empty call, or broken JSON). */
  | { think?: string; garbage: string };

export interface SearchAgentScript {
  syntax: SearchSyntax;
  steps: SearchAgentStep[];
  /** The last turn: `<tag>text</tag>`. */
  final: { tag: string; text: string; think?: string };
}

export interface SearchAgentContext {
  request: CompletionContext;
  /** The prompt's user turns, joined. */
  prompt: string;
  /** The trajectory's own random stream: the same on every turn of it, different between trajectories. */
  rng: Rng;
  /** The bodies of the observations the agent has seen so far (step k may read the first k). */
  observations: string[];
}

const PLAN = /\[plan ([0-9a-f]{8})\]/;
const OBSERVATION = /<information>\n([\s\S]*?)<\/information>/g;
const DEFAULT_THINK = 'I need more facts before I can answer; let me look them up.';

function call(syntax: SearchSyntax, body: string): string {
  return syntax === 'search_tags' ? `<search>${body}</search>` : `<tool_call>${body}</tool_call>`;
}

const searchBody = (syntax: SearchSyntax, query: string): string =>
  syntax === 'search_tags' ? query : JSON.stringify({ name: 'search', arguments: { query } });

/** The behaviour that plays `script` for a call kind. */
export function searchAgentBehaviour(
  script: (agent: SearchAgentContext) => SearchAgentScript,
): CallBehaviour {
  return {
    answer: (request) => {
      const prefix = request.prefix ?? '';
      const planned = PLAN.exec(prefix)?.[1];
      const plan =
        planned ??
        sampleRng(request, 'search-agent', userText(request))
          .int(0x1_0000_0000)
          .toString(16)
          .padStart(8, '0');
      const observations = [...prefix.matchAll(OBSERVATION)].map((m) => m[1] ?? '');
      const agent = {
        request,
        prompt: userText(request),
        rng: seededRng('search-agent', plan),
        observations,
      };
      const { syntax, steps, final } = script(agent);
      const mark = planned ? '' : `[plan ${plan}] `;
      const step = steps[observations.length];
      // Text after the closing tag is what an engine would have generated past the stop sequence.
      const overrun = '\nand then I kept writing';
      if (!step) {
        return `<think>${mark}${final.think ?? 'I have what I need.'}</think>\n<${final.tag}>${final.text}</${final.tag}>${overrun}`;
      }
      const body = 'search' in step ? searchBody(syntax, step.search) : step.garbage;
      return `<think>${mark}${step.think ?? DEFAULT_THINK}</think>\n${call(syntax, body)}${overrun}`;
    },
  };
}

/** The call kind of the generic search agent below, for tests of the loop and its clients. */
export const SEARCH_DEMO_CALL = 'search.demo';

/**
 * A generic agent that follows its prompt: a `syntax: qwen3_tool_call` line picks the syntax (default
 * search tags), each `search: q` line is a search, each `garbage: g` line an unreadable call, and
 * `answer: A` the final `<answer>`, right with probability passRate(prompt) (else `not A`).
 */
export const searchDemoBehaviour = searchAgentBehaviour(({ prompt, rng, request }) => {
  const lines = prompt.split('\n').map((l) => /^(\w+):\s?(.*)$/.exec(l.trim()));
  const value = (key: string): string | undefined => lines.find((m) => m?.[1] === key)?.[2];
  const steps = lines.flatMap((m): SearchAgentStep[] => {
    if (m?.[1] === 'search') return [{ search: m[2] ?? '' }];
    if (m?.[1] === 'garbage') return [{ garbage: m[2] ?? '' }];
    return [];
  });
  const answer = value('answer') ?? 'unknown';
  const right = rng.next() < passRateOf(prompt, request.settings.passRate);
  return {
    syntax: value('syntax') === 'qwen3_tool_call' ? 'qwen3_tool_call' : 'search_tags',
    steps,
    final: { tag: 'answer', text: right ? answer : `not ${answer}` },
  };
});
