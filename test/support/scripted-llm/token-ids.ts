import type { ChatRequest } from './chat-request';
import type { TokenIdMode } from './config';

/**
 * The scripted model's sampled tokens, for engines that return them (config `tokenIds`). Its "tokenizer" has
 * one token per UTF-8 byte, id = byte + 3 (0..2 being its special tokens), and each token's log-prob is a
 * fixed function of the id and its position, so a test can recompute what the server sent.
 */

export const tokenIdsOf = (text: string): number[] => [...Buffer.from(text, 'utf8')].map((b) => b + 3);

export const logprobOf = (id: number, position: number): number => -((id + position) % 7) / 8 - 0.01;

/** The fields one choice gains beside `message` and `finish_reason`. */
export function choiceTokenFields(
  mode: TokenIdMode,
  request: ChatRequest,
  promptIds: number[],
  content: string,
): Record<string, unknown> {
  if (mode === 'none') return {};
  const ids = tokenIdsOf(content);
  const fields: Record<string, unknown> = {};
  if (request.tokens.ids) {
    fields.token_ids = ids;
    if (mode === 'sglang') fields.prompt_token_ids = promptIds;
  }
  if (request.tokens.logprobs) {
    const named = mode === 'vllm' && request.tokens.idNames;
    fields.logprobs = {
      content: ids.map((id, i) => ({
        token: named ? `token_id:${id}` : String.fromCharCode(id - 3),
        logprob: logprobOf(id, i),
        bytes: [id - 3],
        top_logprobs: [],
      })),
    };
  }
  return fields;
}

/** The fields the whole response gains: vLLM puts the prompt's ids at the top level. */
export function responseTokenFields(
  mode: TokenIdMode,
  request: ChatRequest,
  promptIds: number[],
): Record<string, unknown> {
  return mode === 'vllm' && request.tokens.ids ? { prompt_token_ids: promptIds } : {};
}
