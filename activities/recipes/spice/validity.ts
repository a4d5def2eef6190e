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
  options: { refuteArithmetic: boolean },
): { valid: true; task: SpiceTask } | { valid: false; reason: string } {
  if (finishReason === 'length') return { valid: false, reason: 'truncated' };
  const parsed = parseChallengerOutput(completion, request);
  if (!parsed.ok) return { valid: false, reason: parsed.reason };
  if (options.refuteArithmetic && refutesArithmetic(parsed.task.question, parsed.task.answer))
    return { valid: false, reason: 'wrong_arithmetic' };
  return { valid: true, task: parsed.task };
}
