/**
 * What "a token" means for passage budgets (`retrieval.passageTokens`, `SearchOptions.maxTokens`): a run of
 * letters, marks and digits, or one other non-space character (punctuation, a symbol). The retriever has no
 * model tokenizer, so this is an approximation that every reader of the index counts the same way; a BPE
 * tokenizer makes roughly 1.2–1.5 of its tokens per word of English, so budgets counted here are a little
 * generous in model tokens.
 */
const TOKEN = /[\p{L}\p{M}\p{N}]+|[^\s\p{L}\p{M}\p{N}]/gu;

/** The number of tokens in `text`. */
export function countTokens(text: string): number {
  return text.match(TOKEN)?.length ?? 0;
}

/**
 * The passages in rank order within `maxTokens` in all: each is cut to what the earlier ones left, and those
 * past the budget are dropped (a tool response capped as a whole, SCOPE's "at most 500 tokens in total").
 */
export function withinTokens<T extends { text: string }>(passages: readonly T[], maxTokens: number): T[] {
  const out: T[] = [];
  let left = maxTokens;
  for (const p of passages) {
    if (left <= 0) break;
    const text = cutToTokens(p.text, left);
    left -= countTokens(text);
    out.push(text === p.text ? p : { ...p, text });
  }
  return out;
}

/** `text` up to the end of its `maxTokens`-th token (spacing kept as it was); the whole text when shorter. */
export function cutToTokens(text: string, maxTokens: number): string {
  if (maxTokens <= 0) return '';
  let seen = 0;
  for (const match of text.matchAll(TOKEN)) {
    if (++seen === maxTokens) return text.slice(0, match.index + match[0].length);
  }
  return text;
}
