import type { RecipeContext } from '../types';
import { SSP_CALLS } from '../../clients/llm-protocol';
import { seedOf } from '../../lib/rng';
import { searchRollout, sspSolverSearch } from './rollout';
import { verifyQuestion } from './verification';
import {
  JUDGE,
  SOLVER,
  VERIFIER,
  type Problem,
  type SspGated,
  type SspSolved,
  type Verification,
} from './records';
import type { ChatMessage } from '../../clients/trainer-contract';

/**
 * RAG verification, then step 7 (ssp.md §1.5–1.7). Verification runs here, on the rollout pool with the
 * other LLM calls, and its verdict is kept as a part of the unit as soon as it is reached, so a shard retried
 * in the middle of the unit's solver trajectories does not ask again. An erroring verification fails the
 * question in its attempt but is not kept (it reached no verdict: an outage should not reject a question for
 * good), so a retried unit may verify it after all and solve it instead of its replay problem: the solver
 * trajectories' checkpoints are named by the problem they solve, and never resume another's. A verified question gets
 * n = groupSize solver trajectories; an invalid slot gets them on its replay problem instead, or none when
 * the pool was empty (the spec's dummy problem would train nothing: its group's rewards are all equal).
 */
export async function solveSsp(ctx: RecipeContext, gated: SspGated): Promise<SspSolved> {
  const { config, iteration } = ctx;
  const p = config.ssp;
  const head = { unit: gated.unit, docIndex: gated.docIndex };
  const verify = async (question: string, messages: ChatMessage[]): Promise<Verification> => {
    const kept = ctx.unitPart<Verification>(gated.unit, 'rag-verification');
    const stored = await kept.load();
    if (stored) return stored;
    const verdict = await verifyQuestion({
      llm: ctx.llm(VERIFIER),
      call: SSP_CALLS.ragVerifier,
      messages,
      question,
      groundTruth: gated.answer,
      seed: seedOf(config.seed, iteration, 'rag', gated.docIndex),
      sampling: p.verifier,
      judge: {
        llm: ctx.llm(JUDGE),
        call: SSP_CALLS.verificationJudge,
        seed: seedOf(config.seed, iteration, 'rag-judge', gated.docIndex),
        sampling: p.judge,
        signal: ctx.signal,
      },
      signal: ctx.signal,
    });
    if (verdict.failure !== 'error') await kept.save(verdict);
    return verdict;
  };
  const verification =
    gated.rule.passed && gated.question !== undefined && gated.verifierMessages
      ? await verify(gated.question, gated.verifierMessages)
      : undefined;
  const valid = gated.rule.passed && gated.question !== undefined && (verification?.passed ?? true);
  const withVerification = verification ? { verification } : {};
  const problem: Problem | undefined =
    valid && gated.question !== undefined
      ? { question: gated.question, answer: gated.answer }
      : gated.replacement;
  if (!problem) return { ...head, ...withVerification, source: 'none', trajectories: [] };

  const source = valid ? 'own' : 'replay';
  const { messages } = sspSolverSearch(config, problem.question);
  const trajectories = await Promise.all(
    Array.from({ length: config.groupSize }, (_, j) =>
      searchRollout(ctx, {
        role: SOLVER,
        call: SSP_CALLS.solver,
        messages,
        seed: seedOf(config.seed, iteration, 'solve', gated.docIndex, j),
        temperature: config.sampling.temperature,
        finalTag: 'answer',
        checkpoint: { unit: gated.unit, name: `${SOLVER}-${source}-${j}` },
      }),
    ),
  );
  return { ...head, ...withVerification, source, problem, messages, trajectories };
}
