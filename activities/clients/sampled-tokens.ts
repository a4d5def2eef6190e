import type { InsertedSegment, SampledSegment, TrainingRow } from './trainer-contract';

/**
 * Token in, token out: the token ids an engine sampled and their log-probabilities, read from an
 * OpenAI-compatible chat completion choice, and the training-row fields that carry them to the kernel.
 *
 * The client asks every engine for them at once (`logprobs`, `return_token_ids`, `return_tokens_as_token_ids`)
 * and reads what comes back:
 * - `choice.token_ids`: vLLM's and SGLang's `return_token_ids` (every sampled id, the stop token included);
 * - else `choice.logprobs.content[i].token` of the form `token_id:{id}`: vLLM's `return_tokens_as_token_ids`;
 * - the log-probs from `choice.logprobs.content[i].logprob`, kept only when there is one per id.
 * An engine that returns neither (plain OpenAI, an older server) gives no ids: its rows fall back to text.
 */

export interface SampledTokens {
  ids: number[];
  /** One per id, when the engine reported them. */
  logprobs?: number[];
}

/** The request fields that ask vLLM, SGLang and the kernel for the sampled ids and their log-probs. */
export const TOKEN_REQUEST = {
  logprobs: true,
  return_token_ids: true,
  return_tokens_as_token_ids: true,
} as const;

const TOKEN_ID = /^token_id:(\d+)$/;

/** The sampled ids of one choice, or undefined when the engine returned none; throws on ids that are not ids. */
export function sampledTokensOf(choice: unknown): SampledTokens | undefined {
  const c = (choice ?? {}) as { token_ids?: unknown; logprobs?: { content?: unknown } | null };
  const content = Array.isArray(c.logprobs?.content) ? (c.logprobs.content as unknown[]) : undefined;
  let ids: number[] | undefined;
  if (c.token_ids !== undefined && c.token_ids !== null) {
    if (!Array.isArray(c.token_ids) || !c.token_ids.every(isTokenId)) {
      throw new Error('token_ids: expected an array of non-negative integer token ids');
    }
    ids = c.token_ids;
  } else if (content && content.length > 0) {
    const parsed = content.map((entry) => TOKEN_ID.exec(String((entry as { token?: unknown })?.token))?.[1]);
    if (parsed.every((id) => id !== undefined)) ids = parsed.map(Number);
  }
  if (!ids) return undefined;
  const logprobs = content?.map((entry) => (entry as { logprob?: unknown })?.logprob);
  const usable =
    logprobs?.length === ids.length &&
    logprobs.every((lp): lp is number => typeof lp === 'number' && Number.isFinite(lp) && lp <= 0);
  return usable ? { ids, logprobs } : { ids };
}

const isTokenId = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0;

/**
 * The row fields of a completion sampled in turns: `completionTokens` (each turn's ids, the inserted text
 * between them) and `behaviourLogprobs` (when every turn had them). Without ids for every turn the row carries
 * neither, and the kernel tokenizes its text.
 */
export function tokenFields(
  parts: ReadonlyArray<{ sampled: SampledTokens | undefined } | { inserted: string }>,
): Pick<TrainingRow, 'completionTokens' | 'behaviourLogprobs'> {
  const segments: Array<SampledSegment | InsertedSegment> = [];
  const logprobs: number[] = [];
  let allLogprobs = true;
  for (const part of parts) {
    if ('inserted' in part) {
      if (part.inserted !== '') segments.push({ text: part.inserted });
      continue;
    }
    if (!part.sampled) return {};
    if (part.sampled.ids.length === 0) continue;
    segments.push({ ids: part.sampled.ids });
    if (part.sampled.logprobs) logprobs.push(...part.sampled.logprobs);
    else allLogprobs = false;
  }
  if (!segments.some((s) => 'ids' in s)) return {};
  return { completionTokens: segments, ...(allLogprobs ? { behaviourLogprobs: logprobs } : {}) };
}

/** The row fields of a single-turn completion (see `tokenFields`). */
export const sampledFields = (
  sampled: SampledTokens | undefined,
): Pick<TrainingRow, 'completionTokens' | 'behaviourLogprobs'> => tokenFields([{ sampled }]);

/** The `sampled` list of n samples' ids, for records that keep completions as plain strings; none without ids. */
export function sampledList(samples: ReadonlyArray<{ sampled?: SampledTokens }>): {
  sampled?: Array<SampledTokens | null>;
} {
  return samples.some((s) => s.sampled) ? { sampled: samples.map((s) => s.sampled ?? null) } : {};
}
