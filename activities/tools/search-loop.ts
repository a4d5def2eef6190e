import { ContextLengthExceeded } from '../clients/inference';
import type { ChatMessage } from '../clients/trainer-contract';
import { tokenFields, type TokenFields } from '../clients/sampled-tokens';
import { seedOf } from '../lib/rng';
import { errorObservation, noticeObservation, resultsObservation } from './observation';
import { withinTokens } from '../retrieval/tokens';
import {
  CALL_EXAMPLE,
  checkTagNames,
  closeTurn,
  stopSequences,
  turnAction,
  type SearchCall,
} from './search-syntax';
import type { Passage, SearchLoopSpec, Trajectory, TrajectoryTurn } from './types';

/**
 * The multi-turn search loop of SSP and SCOPE rollouts. A trajectory is ONE assistant message that grows turn
 * by turn: the model writes until it closes a search call or a final tag (stop sequences), the environment
 * appends an observation, and the next request asks the server to continue that message
 * (`continue_final_message`). It ends when a final tag closes, the model stops without one, or a budget runs
 * out. Each finished turn is checkpointed, and each turn's request seed derives from the spec's seed and the
 * turn's index, so a retried shard resumes where it was and sends exactly the requests it would have sent.
 */

/**
 * Tokens of text no server counted (observations; completions without usage): one per 4 code points, rounded
 * up, the usual rule of thumb for English under BPE tokenizers. It only decides when the budget runs out.
 */
export const estimateTokens = (text: string): number => Math.ceil(codePoints(text) / 4);

const codePoints = (text: string): number => [...text].length;

const EMPTY: Trajectory = {
  completion: '',
  lossMaskSpans: [],
  turns: [],
  searches: [],
  passages: [],
  stop: 'no_final',
};

export async function runSearchLoop(spec: SearchLoopSpec): Promise<Trajectory> {
  checkSpec(spec);
  let trajectory = (await spec.checkpoint?.load()) ?? EMPTY;
  for (;;) {
    const stop = stopOf(trajectory, spec);
    if (stop) return { ...trajectory, stop };
    const next = await nextTurn(spec, trajectory).catch((err: unknown) => {
      // The trajectory outgrew the model's context: it ends here, as at a budget, with the turns that fit
      // (trainable as they are). A retry sends the same request and ends the same way. The question itself
      // not fitting (no turn yet) stays the error it is.
      if (err instanceof ContextLengthExceeded && trajectory.turns.length > 0) return undefined;
      throw err;
    });
    if (!next) return { ...trajectory, stop: 'context_length' };
    trajectory = next;
    await spec.checkpoint?.save({ ...trajectory, stop: stopOf(trajectory, spec) ?? 'no_final' });
  }
}

function checkSpec(spec: SearchLoopSpec): void {
  checkTagNames(spec.finalTags);
  if (spec.finalTags.length === 0) throw new Error('runSearchLoop: finalTags is empty');
  if (!(spec.maxTurns >= 1) || !(spec.maxTokens >= 1)) {
    throw new Error(
      `runSearchLoop: maxTurns (${spec.maxTurns}) and maxTokens (${spec.maxTokens}) must be ≥ 1`,
    );
  }
}

const tokensUsed = (t: Trajectory): number =>
  t.turns.reduce(
    (sum, turn) => sum + (turn.tokens ?? estimateTokens(turn.text + (turn.observation ?? ''))),
    0,
  );

/** Why the trajectory is over, or undefined while another turn is due. A function of the turns alone. */
function stopOf(t: Trajectory, spec: SearchLoopSpec): Trajectory['stop'] | undefined {
  const last = t.turns.at(-1);
  if (!last) return undefined;
  if (turnAction(last.text, spec.syntax, spec.finalTags).kind === 'final') return 'final';
  if (last.finishReason === 'length') return 'max_tokens';
  if (!last.search) return 'no_final';
  if (t.turns.length >= spec.maxTurns) return 'max_turns';
  if (tokensUsed(t) >= spec.maxTokens) return 'max_tokens';
  return undefined;
}

/** One model turn and the environment's answer to it. */
async function nextTurn(spec: SearchLoopSpec, t: Trajectory): Promise<Trajectory> {
  const index = t.turns.length;
  const used = tokensUsed(t);
  const continuing = t.completion !== '';
  const messages: ChatMessage[] = continuing
    ? [...spec.messages, { role: 'assistant', content: t.completion }]
    : spec.messages;
  const [sample] = await spec.llm.chat({
    role: spec.role,
    call: spec.call,
    messages,
    n: 1,
    seed: seedOf(spec.seed, 'search-turn', index),
    temperature: spec.temperature,
    topP: spec.topP,
    maxTokens: spec.maxTokens - used,
    stop: stopSequences(spec.syntax, spec.finalTags),
    continueFinalMessage: continuing,
    ...(spec.signal ? { signal: spec.signal } : {}),
  });
  if (!sample) throw new Error(`runSearchLoop: the server answered turn ${index} with no completion`);
  const text = closeTurn(sample.content, sample.finishReason, spec.syntax, spec.finalTags);
  const textTokens = sample.completionTokens ?? estimateTokens(sample.content);
  const turn: TrajectoryTurn = {
    text,
    finishReason: sample.finishReason,
    tokens: textTokens,
    ...(sample.sampled ? { sampled: sample.sampled } : {}),
  };
  const action = turnAction(text, spec.syntax, spec.finalTags);
  let passages: Passage[] = [];
  if (action.kind === 'search') {
    turn.search = { query: action.call.query, valid: action.call.valid };
    // A search whose answer no turn could read (turn or token budget spent) is not run.
    const readable = index + 1 < spec.maxTurns && used + textTokens < spec.maxTokens;
    if (readable) {
      const answer = await observe(spec, t, action.call);
      passages = answer.passages;
      turn.observation = answer.observation;
      turn.answeredWith = answer.kind;
      turn.tokens = textTokens + estimateTokens(answer.observation);
    }
  }
  return append(t, turn, passages);
}

interface Answer {
  kind: NonNullable<TrajectoryTurn['answeredWith']>;
  observation: string;
  passages: Passage[];
}

async function observe(spec: SearchLoopSpec, t: Trajectory, call: SearchCall): Promise<Answer> {
  if (!call.valid) {
    const problem = call.problem ?? 'the call cannot be read';
    return { kind: 'error', observation: errorObservation(problem, CALL_EXAMPLE[spec.syntax]), passages: [] };
  }
  if (spec.searchLimit && t.searches.length >= spec.searchLimit.after) {
    return { kind: 'notice', observation: noticeObservation(spec.searchLimit.notice), passages: [] };
  }
  const found = await spec.retriever.search(call.query, {
    topK: spec.topK,
    maxTokens: spec.passageTokens,
    ...(spec.signal ? { signal: spec.signal } : {}),
  });
  const passages = spec.responseTokens === undefined ? found : withinTokens(found, spec.responseTokens);
  return { kind: 'results', observation: resultsObservation(passages), passages };
}

/** The trajectory with the turn appended: its text, then its observation as a masked span. */
function append(t: Trajectory, turn: TrajectoryTurn, passages: Passage[]): Trajectory {
  let completion = t.completion + turn.text;
  const lossMaskSpans = [...t.lossMaskSpans];
  if (turn.observation !== undefined) {
    const start = codePoints(completion);
    lossMaskSpans.push([start, start + codePoints(turn.observation)]);
    completion += turn.observation;
  }
  const ran = turn.answeredWith === 'results' && turn.search ? [turn.search.query] : [];
  return {
    completion,
    lossMaskSpans,
    turns: [...t.turns, turn],
    searches: [...t.searches, ...ran],
    passages: [...t.passages, ...passages],
    stop: t.stop,
  };
}

/**
 * A trajectory's row fields for token-exact training: each turn's sampled ids, each observation as inserted
 * text (out of the loss), per turn, as sampled-tokens.ts `tokenFields`; none when a turn has no ids.
 */
export function trajectoryTokenFields(t: Pick<Trajectory, 'turns'>): TokenFields {
  return tokenFields(
    t.turns.flatMap((turn) => [{ sampled: turn.sampled }, { inserted: turn.observation ?? '' }]),
  );
}
