import type { InsertedSegment, SampledSegment, TrainingRow } from './trainer-contract';

/**
 * Token in, token out: the token ids an engine sampled and their log-probabilities, read from an
 * OpenAI-compatible chat completion choice, with the temperature and top-p they were sampled at, and the
 * training-row fields that carry them to the kernel.
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
  /**
   * The request's temperature and top-p (the inference client records them with every sample): the kernel
   * scores the row at that temperature. Absent in records stored before the fields, whose rows train at 1.
   */
  temperature?: number;
  topP?: number;
}

/** What a training row carries of its sampled tokens. */
export type TokenFields = Pick<
  TrainingRow,
  'completionTokens' | 'behaviourLogprobs' | 'temperature' | 'topP'
>;

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
 * between them), `behaviourLogprobs` (when every turn had them), and the turns' `temperature` and `topP`
 * (`samplingFields`). Without ids for every turn the row carries none of them, and the kernel tokenizes its
 * text at temperature 1 (the engines that serve a trained policy, vLLM, SGLang and the kernel, return ids).
 */
export function tokenFields(
  parts: ReadonlyArray<{ sampled: SampledTokens | undefined } | { inserted: string }>,
): TokenFields {
  const segments: Array<SampledSegment | InsertedSegment> = [];
  const logprobs: number[] = [];
  const turns: SampledTokens[] = [];
  let allLogprobs = true;
  for (const part of parts) {
    if ('inserted' in part) {
      if (part.inserted !== '') segments.push({ text: part.inserted });
      continue;
    }
    if (!part.sampled) return {};
    if (part.sampled.ids.length === 0) continue;
    segments.push({ ids: part.sampled.ids });
    turns.push(part.sampled);
    if (part.sampled.logprobs) logprobs.push(...part.sampled.logprobs);
    else allLogprobs = false;
  }
  if (turns.length === 0) return {};
  return {
    completionTokens: segments,
    ...(allLogprobs ? { behaviourLogprobs: logprobs } : {}),
    ...samplingFields(turns),
  };
}

/**
 * The row's `temperature` and `topP`: those its turns were sampled at, sent only where they are not the
 * kernel's default 1 (so a kernel from before the fields still takes a run at 1), and none for a greedy
 * sample (temperature 0), whose log-probs every engine reports at 1. A row is scored at one temperature: turns
 * that recorded different ones are refused. A turn resumed from a record stored before the fields has none.
 */
function samplingFields(turns: readonly SampledTokens[]): Pick<TrainingRow, 'temperature' | 'topP'> {
  const recorded = turns.filter((t) => t.temperature !== undefined);
  const [first] = recorded;
  if (!first) return {};
  const { temperature = 1, topP = 1 } = first;
  const other = recorded.find((t) => t.temperature !== temperature || (t.topP ?? 1) !== topP);
  if (other) {
    throw new Error(
      `the turns of one completion were sampled at temperature ${temperature}, top-p ${topP} and at ` +
        `temperature ${other.temperature}, top-p ${other.topP ?? 1}; a training row is scored at one temperature`,
    );
  }
  if (temperature === 0) return {};
  return { ...(temperature !== 1 ? { temperature } : {}), ...(topP !== 1 ? { topP } : {}) };
}

/** The row fields of a single-turn completion (see `tokenFields`). */
export const sampledFields = (sampled: SampledTokens | undefined): TokenFields => tokenFields([{ sampled }]);

/** The `sampled` list of n samples' ids, for records that keep completions as plain strings; none without ids. */
export function sampledList(samples: ReadonlyArray<{ sampled?: SampledTokens }>): {
  sampled?: Array<SampledTokens | null>;
} {
  return samples.some((s) => s.sampled) ? { sampled: samples.map((s) => s.sampled ?? null) } : {};
}
