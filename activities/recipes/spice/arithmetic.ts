/**
 * Refuting a stated answer by arithmetic: a question that asks for the value of a plain integer sum or
 * difference ("What is 37 + 48?", "Compute 12 - 5 + 3.") has one right answer, computed here exactly
 * (BigInt). Used by SPICE's gate when `spice.refuteArithmeticAnswers` is on: a Challenger that states a wrong
 * value for such a question wrote an invalid task, whatever the Reasoner answers. Without it, a small
 * Challenger and Reasoner can collude (the Challenger states 9 for every sum and the Reasoner learns to answer
 * 9), which raises both rewards while held-out accuracy falls. The paper has no such check: its Challenger's
 * answers are grounded in the document by a capable model.
 */
const SUM =
  /^\s*(?:what\s+is|compute|calculate|evaluate|find)\s+(-?\d{1,30}(?:\s*[+-]\s*\d{1,30})+)\s*[?.]?\s*$/i;

/** The exact value of the sum the question asks for, or undefined when it asks for something else. */
export function askedSum(question: string): bigint | undefined {
  const expression = SUM.exec(question)?.[1];
  if (expression === undefined) return undefined;
  const terms = expression.replace(/\s+/g, '').match(/[+-]?\d+/g) ?? [];
  return terms.reduce((total, term) => total + BigInt(term), 0n);
}

/** Whether `answer` contradicts the value of an arithmetic question (false for any other question). */
export function refutesArithmetic(question: string, answer: string): boolean {
  const value = askedSum(question);
  if (value === undefined) return false;
  const stated = answer.trim().replace(/^\+/, '');
  return !/^-?\d+$/.test(stated) || BigInt(stated) !== value;
}
