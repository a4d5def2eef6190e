import { seededRng, type Rng } from '../../../activities/lib/rng';
import type { CompletionContext } from './behaviour';

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
