/**
 * Cover exact match (CEM), the strict rule SPELL scores free-text answers with (spell.md §1.7): after SQuAD's
 * answer normalisation, the reference must occur inside the prediction. Loose token overlap would let a
 * responder win by listing candidates; CEM keeps the rule strict (§9, "responder mode collapse").
 */

/** Python's `string.punctuation`, which SQuAD's normaliser removes. */
const ASCII_PUNCTUATION = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g;

/** SQuAD v1.1 `normalize_answer`: lower case, punctuation removed, articles removed, whitespace collapsed. */
export function squadNormalize(text: string): string {
  return text
    .toLowerCase()
    .replace(ASCII_PUNCTUATION, '')
    .replace(/\b(a|an|the)\b/g, ' ')
    .split(/\s+/)
    .filter((w) => w !== '')
    .join(' ');
}

/** 1 iff norm(reference) is a substring of norm(prediction); a reference that normalises to nothing never matches. */
export function coverExactMatch(prediction: string, reference: string): boolean {
  const gold = squadNormalize(reference);
  return gold !== '' && squadNormalize(prediction).includes(gold);
}
