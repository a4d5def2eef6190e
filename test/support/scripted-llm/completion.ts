import { seededRng, type Rng } from '../../../activities/lib/rng';
import type { BehaviourSettings, FaultKind } from './config';
import type { ChatTurn } from './chat-request';

/** One choice of a request, as a behaviour sees it. */
export interface CompletionContext {
  /** The model the request named (e.g. `scripted-policy-v3`); behaviours that ignore it need not set it. */
  model?: string;
  messages: readonly ChatTurn[];
  /**
   * The assistant message being continued (`continue_final_message`), undefined for a new message. It is
   * also the last of `messages`; a writer returns only the text that follows it, as an engine does.
   */
  prefix?: string | undefined;
  seed: number | undefined;
  temperature: number | undefined;
  /** The choice index, 0..n-1. */
  index: number;
  settings: BehaviourSettings;
}

/** Faults that change what the model writes, as opposed to how the server answers. */
export type ContentFaultKind = Extract<FaultKind, 'missingBoxed' | 'garbageContent'>;

export type Writer = (ctx: CompletionContext) => string;

export interface CallBehaviour {
  answer: Writer;
  /** What the model writes instead when a content fault hits this call kind; kinds without one never get it. */
  fault?: { kind: ContentFaultKind; write: Writer };
}

/**
 * What every behaviour reads of a request. A completion's random stream depends on the prompt parts the
 * caller names, the request seed and the choice index, except under greedy decoding (temperature 0), where
 * every choice is the same.
 */
export function sampleRng(ctx: CompletionContext, ...parts: string[]): Rng {
  return seededRng(...parts, ctx.seed ?? 'no-seed', ctx.temperature === 0 ? 'greedy' : ctx.index);
}

/** The user turns of the prompt, joined. */
export const userText = (ctx: CompletionContext): string =>
  ctx.messages
    .filter((m) => m.role === 'user')
    .map((m) => m.content)
    .join('\n');
