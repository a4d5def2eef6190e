import type { AnswerChecker } from '../../activities/scoring/answer-checker-pool';
import { checkAnswer } from '../../activities/scoring/verifiers';

/** The real checker run on the test's own thread, for stage tests that are not about the pool. */
export const inlineAnswerChecker: AnswerChecker = (r) =>
  Promise.resolve({ verdict: checkAnswer(r.kind, r.predicted, r.gold), ms: 0 });
