/**
 * Splits a document into pieces of at most `maxChars`, preferring paragraph breaks, then sentence ends, then
 * whitespace, so a proposer sees coherent passages. Deterministic: the same text always gives the same pieces.
 */
export function splitIntoSegments(text: string, maxChars: number): string[] {
  if (!Number.isInteger(maxChars) || maxChars < 1) {
    throw new RangeError(`maxSegmentChars must be a positive integer, got ${maxChars}`);
  }
  const paragraphs = text
    .split(/\n[^\S\n]*\n\s*/)
    .map((p) => p.trim())
    .filter((p) => p !== '');
  const pieces = paragraphs.flatMap((p) => (p.length <= maxChars ? [p] : splitParagraph(p, maxChars)));
  return pack(pieces, maxChars, '\n\n');
}

function splitParagraph(paragraph: string, maxChars: number): string[] {
  const sentences = paragraph
    .split(/(?<=[.!?。！？])\s+/)
    .flatMap((s) => (s.length <= maxChars ? [s] : splitAtWhitespace(s, maxChars)));
  return pack(sentences, maxChars, ' ');
}

/** Cuts at the last whitespace within the limit, or hard at the limit (never inside a surrogate pair). */
function splitAtWhitespace(text: string, maxChars: number): string[] {
  const out: string[] = [];
  let rest = text;
  while (rest.length > maxChars) {
    let cut = maxChars;
    while (cut > 0 && !/\s/.test(rest.charAt(cut))) cut--;
    if (cut === 0) {
      cut = maxChars;
      if (cut > 1 && isLowSurrogate(rest.charCodeAt(cut))) cut -= 1;
    }
    out.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).trimStart();
  }
  if (rest !== '') out.push(rest);
  return out;
}

/** Greedily joins consecutive pieces while the result stays within the limit. */
function pack(pieces: readonly string[], maxChars: number, separator: string): string[] {
  const out: string[] = [];
  let current = '';
  for (const piece of pieces) {
    if (current === '') current = piece;
    else if (current.length + separator.length + piece.length <= maxChars) current += separator + piece;
    else {
      out.push(current);
      current = piece;
    }
  }
  if (current !== '') out.push(current);
  return out;
}

const isLowSurrogate = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff;
