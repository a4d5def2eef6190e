/**
 * Tag pairs in a model's generated text (`<question>…</question>`, `<answer>…</answer>`, `<score>…</score>`).
 * A pair is an opening tag and the first closing tag after it, matched case-insensitively, so unbalanced or
 * nested tags count once. Only the text a model generated may be passed here: prompts that mention the tags
 * themselves would otherwise shift every count (the MAE reference code's offset, spec mae.md §2.2).
 */

const TAG_NAME = /^[a-z][a-z0-9_-]*$/;

/** The trimmed contents of every `<tag>…</tag>` pair, in order. */
export function tagContents(text: string, tag: string): string[] {
  if (!TAG_NAME.test(tag)) throw new RangeError(`not a tag name: ${JSON.stringify(tag)}`);
  const pair = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'gi');
  return [...text.matchAll(pair)].map((m) => (m[1] ?? '').trim());
}

/**
 * The format reward (MAE §2.2, the same rule for every role): 1 for exactly one valid pair, 0.5 for more
 * than one, 0 otherwise. A valid pair holds something besides whitespace. An empty generation has no pair
 * and gets 0, as the paper's rule says; the reference code's 0.5 for it is not followed.
 */
export function formatReward(text: string, tag: string): number {
  const valid = tagContents(text, tag).filter((c) => c !== '').length;
  return valid === 1 ? 1 : valid > 1 ? 0.5 : 0;
}

/** Closed `<think>…</think>` blocks, matched case-insensitively and lazily (each up to its first closing tag). */
const THINK_BLOCK = /<think>[\s\S]*?<\/think>/i;
const THINK_BLOCKS = /<think>[\s\S]*?<\/think>/gi;

/** Whether the text holds a closed `<think>…</think>` block. */
export const hasThink = (text: string): boolean => THINK_BLOCK.test(text);

/** The text with every closed `<think>…</think>` block replaced by a space, so reasoning is not read as output. */
export const withoutThink = (text: string): string => text.replace(THINK_BLOCKS, ' ');
