/**
 * Reasoner answer checking per answer kind (§2.2): MCQ letters, integers by value, expressions by
 * mathematical equivalence, short strings by normalised exact match. A missing answer is never correct.
 * Judge stages run checkAnswer in the answer-checker pool (answer-checker-pool.ts), under a time limit.
 */
import { checkEquivalence, type EquivalenceVerdict } from './math-equivalence';

export type AnswerKind = 'mcq' | 'integer' | 'expression' | 'string';
export const ANSWER_KINDS: readonly AnswerKind[] = ['mcq', 'integer', 'expression', 'string'];

export function checkAnswer(
  kind: AnswerKind,
  predicted: string | undefined,
  gold: string,
): EquivalenceVerdict {
  if (predicted === undefined || predicted.trim() === '') return 'unparsable';
  switch (kind) {
    case 'mcq': {
      const letter = extractChoiceLetter(predicted);
      if (letter === undefined) return 'unparsable';
      return letter === extractChoiceLetter(gold) ? 'equivalent' : 'different';
    }
    case 'integer':
      return checkEquivalence(predicted, gold, true);
    case 'expression':
      return checkEquivalence(predicted, gold);
    case 'string': {
      const normalized = normalizeStringAnswer(predicted);
      if (normalized === '') return 'unparsable';
      return normalized === normalizeStringAnswer(gold) ? 'equivalent' : 'different';
    }
  }
}

/**
 * The option letter of an MCQ answer, upper-cased: `B`, `b`, `(B)`, `B)`, `B.`, `B:`, `B) some text`,
 * `\text{B}`, `**B**`. Accepting a trailing option text is not in the paper (the spec's addition); a letter
 * followed by a plain space (`a cat`) is not a choice.
 */
export function extractChoiceLetter(answer: string): string | undefined {
  const bare = unwrapTextCommands(answer).replace(/[$*]/g, '').trim();
  const match = /^\(?\s*([A-Za-z])\s*(?:$|[).:\]])/.exec(bare);
  return match?.[1]?.toUpperCase();
}

/**
 * A string answer reduced for exact matching: `\text{}`-like wrappers removed, accents folded, lower case,
 * apostrophes removed, other punctuation turned into spaces, whitespace collapsed and one leading article
 * (a/an/the) dropped. The spec allows case and punctuation normalisation (not in the paper); the accent
 * folding and the leading-article rule are this implementation's additions. Symbols such as `+` are kept,
 * so `C++` and `C` stay different.
 */
export function normalizeStringAnswer(answer: string): string {
  return unwrapTextCommands(answer)
    .replace(/\$/g, '')
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/['’‘`]/g, '')
    .replace(/\p{P}/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^(?:a|an|the) (?=\S)/, '');
}

/** `\text{X}`, `\textbf{X}`, `\mathrm{X}`, ... → `X`, innermost first (no nested braces inside). */
function unwrapTextCommands(answer: string): string {
  const wrapper =
    /\\(?:text|textbf|textit|textrm|textsf|texttt|mathrm|mathbf|mathit|mbox|operatorname)\s*\{([^{}]*)\}/g;
  let current = answer;
  for (let previous = ''; previous !== current;) {
    previous = current;
    current = current.replace(wrapper, '$1');
  }
  return current;
}
