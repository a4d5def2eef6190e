import type { PlanDocument } from '../types';
import { judgeAttempt, type ChallengerRequest } from './validity';
import type { GateVerdict, SpiceGated, SpiceProposal } from './records';

/**
 * Validity, leakage and duplicate checks for a shard (step 2d's "valid"): each trajectory is parsed and
 * validated strictly (format, fields, answer type, no reference to "the text", the MCQ `Correct:` line
 * stripped), and a question already asked for an earlier document of the shard is a duplicate. Two
 * trajectories of the same document may share a question: they are separate samples of one prompt.
 */
export function gateSpice(
  plan: PlanDocument[],
  proposals: SpiceProposal[],
  options: { refuteArithmetic: boolean; requireAnswerInDocument: boolean },
): SpiceGated[] {
  const documents = new Map(plan.map((d) => [d.docIndex, d.text]));
  const askedBy = new Map<string, number>();
  return [...proposals]
    .sort((a, b) => a.docIndex - b.docIndex)
    .map((p) => {
      const request: ChallengerRequest =
        p.format === 'mcq'
          ? { format: 'mcq' }
          : { format: 'free_form', answerType: p.answerType ?? 'String' };
      const verdicts = p.trajectories.map((t): GateVerdict => {
        const verdict = judgeAttempt(t.completion, t.finishReason, request, {
          refuteArithmetic: options.refuteArithmetic,
          ...(options.requireAnswerInDocument ? { groundIn: documents.get(p.docIndex) ?? '' } : {}),
        });
        if (!verdict.valid) return verdict;
        const key = normalizeQuestion(verdict.task.question);
        const owner = askedBy.get(key);
        if (owner !== undefined && owner !== p.docIndex) return { valid: false, reason: 'duplicate' };
        askedBy.set(key, p.docIndex);
        return verdict;
      });
      return { unit: p.unit, docIndex: p.docIndex, verdicts };
    })
    .sort((a, b) => a.unit - b.unit);
}

const normalizeQuestion = (q: string): string => q.toLowerCase().replace(/\s+/g, ' ').trim();
