/**
 * A tokenizer-free token estimate (about four characters per token for English text), for limits and length
 * penalties computed where the sampler's token counts are not at hand.
 */
export const approxTokens = (text: string): number => Math.ceil(text.length / 4);
