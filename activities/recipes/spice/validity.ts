import { refutesArithmetic } from './arithmetic';
import { parseChallengerOutput, type FreeFormType, type SpiceTask } from './parse';

export type ChallengerRequest = { format: 'mcq' } | { format: 'free_form'; answerType: FreeFormType };

/**
 * Whether one Challenger attempt is a valid task. Used by propose (to decide whether to keep trying) and by
 * the gate (the authority), so both agree. A completion cut off at the token limit is invalid even when a
 * JSON object happens to parse: the model did not finish its answer.
 */
export function judgeAttempt(
  completion: string,
  finishReason: string,
  request: ChallengerRequest,
  options: AttemptChecks,
): { valid: true; task: SpiceTask } | { valid: false; reason: string } {
  if (finishReason === 'length') return { valid: false, reason: 'truncated' };
  const parsed = parseChallengerOutput(completion, request);
  if (!parsed.ok) return { valid: false, reason: parsed.reason };
  if (options.refuteArithmetic && refutesArithmetic(parsed.task.question, parsed.task.answer))
    return { valid: false, reason: 'wrong_arithmetic' };
  if (options.groundIn !== undefined && !statedIn(options.groundIn, parsed.task.answer))
    return { valid: false, reason: 'answer_not_in_document' };
  return { valid: true, task: parsed.task };
}

/** Checks beyond the paper's, each off unless the run's config turns it on (config/presets/spice.ts). */
export interface AttemptChecks {
  refuteArithmetic: boolean;
  /** The document the answer must be stated in, when `spice.requireAnswerInDocument` is on. */
  groundIn?: string;
}

/** Whether the answer appears in the document as a whole word or number (case-insensitive). */
function statedIn(document: string, answer: string): boolean {
  const escaped = answer.trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return escaped !== '' && new RegExp(`(?<![\\p{L}\\p{N}])${escaped}(?![\\p{L}\\p{N}])`, 'iu').test(document);
}
