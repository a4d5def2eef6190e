/**
 * Final-answer extraction from a Reasoner completion. SPICE reads the answer from the last `\boxed{}` (§2.2);
 * the braces are matched by scanning because answers such as `\frac{1}{\sqrt{2}}` nest them.
 */

const BOXED = '\\boxed';

/**
 * The content of the last top-level `\boxed{...}` (or `\boxed {...}`), trimmed; boxes nested inside it stay
 * part of the content. Undefined when there is none, or when the last one never closes (a truncated
 * completion has no final answer). Escaped braces `\{` `\}` do not count towards the balance.
 */
export function extractLastBoxed(text: string): string | undefined {
  let found: string | undefined;
  let from = 0;
  for (;;) {
    const at = text.indexOf(BOXED, from);
    if (at < 0) return found;
    const open = skipSpaces(text, at + BOXED.length);
    if (text[open] !== '{') {
      // `\boxedfoo` or a box without braces: not an answer box.
      from = at + BOXED.length;
      continue;
    }
    const close = matchingBrace(text, open);
    if (close === undefined) return undefined;
    found = text.slice(open + 1, close).trim();
    from = close + 1;
  }
}

function skipSpaces(text: string, at: number): number {
  let i = at;
  while (i < text.length && /\s/.test(text[i] as string)) i++;
  return i;
}

/** Index of the `}` closing the `{` at `open`, or undefined when the text ends first. */
export function matchingBrace(text: string, open: number): number | undefined {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') {
      i++; // an escaped character, e.g. `\{`, never opens or closes a group
    } else if (c === '{') {
      depth++;
    } else if (c === '}') {
      depth--;
      if (depth === 0) return i;
    }
  }
  return undefined;
}
