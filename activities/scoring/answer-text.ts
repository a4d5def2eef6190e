/**
 * The text of one final answer, reduced to what carries meaning: math delimiters (`$`, `$$`, `\(`, `\[`),
 * a currency `\$`, MATH's thousands separators (`10,\!000`, `14{,}916`), spacing and sizing commands,
 * `\dfrac`-like variants, double-escaped commands (`\\frac` from a JSON-escaped answer), percent written as
 * a word (`28 percent` → `28\%`) and unit words written after the math (`$125$ miles` → `125`). List words
 * (`and`, `or`) become commas. What is left is still LaTeX, for answer-structure.ts to read.
 */

/** Commands that are sometimes double-escaped (`\\frac`); a `\\` before anything else is a line break. */
const ESCAPED_COMMANDS =
  'frac|dfrac|tfrac|cfrac|sqrt|left|right|pi|cdot|times|text|textbf|mathrm|mathbf|le|leq|ge|geq|lt|gt|neq|ne|pm|mp|infty|cup|in|begin|end|sin|cos|tan|ln|log|circ|approx|quad|qquad|boxed|binom|dbinom';

/** Words after the math that name a unit, not a value: any word of 2+ letters that is not math. */
const MATH_WORDS = new Set(['and', 'or', 'pi', 'sin', 'cos', 'tan', 'log', 'ln', 'exp', 'sqrt', 'abs']);

export function normalizeAnswer(text: string): string {
  let s = text.replace(new RegExp(String.raw`(?<!\\)\\\\(?=(?:${ESCAPED_COMMANDS})(?![A-Za-z]))`, 'g'), '\\');
  s = s
    .replace(/\\\$/g, '')
    .replace(/\$/g, ' ')
    .replace(/\\[()[\]]/g, ' ')
    // Thousands separators: `10,\!000`, `14{,}916`, `1\,000`.
    .replace(/(\d)(?:,\\!|\{,\}|\\,)\s*(?=\d{3}(?!\d))/g, '$1')
    .replace(/\\(?:left|right|bigl|bigr|Bigl|Bigr|biggl|biggr|big|Big|bigg|Bigg)(?![A-Za-z])\s*\.?/g, '')
    .replace(/\\(?:displaystyle|textstyle|!)/g, '')
    .replace(/\\[dtc]frac(?![A-Za-z])/g, '\\frac')
    .replace(/\\[dt]binom(?![A-Za-z])/g, '\\binom')
    .replace(/\\(?:quad|qquad)(?![A-Za-z])|(?<!\\)\\[,;: ]|~/g, ' ')
    .replace(/\\text(?:rm|bf|normal)?\s*\{\s*(?:and|or)\s*\}/g, ',')
    .replace(/(^|[\s)\]}])(?:and|or)(?=[\s([{]|$)/g, '$1,')
    .replace(/\s*,(?:\s*,)+/g, ',')
    .replace(/\s*\\?%/g, '\\%')
    .replace(
      /\s*(?:\\text(?:rm|bf|normal)?\s*\{\s*(?:percent|percentage|pct)\s*\}|\b(?:percent|percentage|pct)\b)/g,
      '\\%',
    )
    .replace(/\\+$/, '')
    .trim()
    .replace(/^,|[.,;]+$/g, '')
    .trim();
  return dropUnitWords(s);
}

/** `125 miles` → `125`, `35 cm^2` → `35`: trailing plain words after a number or a closing bracket. */
function dropUnitWords(s: string): string {
  const m = /^(.*?[\d)}\]])((?:\s+[A-Za-z]{2,}(?:\^\d)?)+)$/.exec(s);
  if (!m) return s;
  const words = (m[2] as string).trim().split(/\s+/);
  if (words.some((w) => MATH_WORDS.has(w.replace(/\^\d$/, '').toLowerCase()))) return s;
  return (m[1] as string).trim();
}

/** Whether the answer carries a percent sign (after normalizeAnswer). */
export function hasPercent(normalized: string): boolean {
  return normalized.includes('\\%');
}

export function withoutPercent(normalized: string): string {
  return normalized.replace(/\\%/g, '');
}

/**
 * The answer as plain text for an exact comparison: text wrappers unwrapped, spaces dropped, one pair of
 * enclosing parentheses around a bare word dropped (`\text{(C)}` is `C`). Braces stay: `\sqrt{2}3` is not
 * `\sqrt{23}`.
 */
export function plainText(normalized: string): string {
  let s = normalized;
  for (let previous = ''; previous !== s;) {
    previous = s;
    s = s.replace(/\\(?:text\w*|mathrm|mathbf|mathit|mbox|operatorname)\s*\{([^{}]*)\}/g, '$1');
  }
  s = s.replace(/\s/g, '');
  const word = /^\(([A-Za-z]+)\)$/.exec(s);
  return word ? (word[1] as string) : s;
}
