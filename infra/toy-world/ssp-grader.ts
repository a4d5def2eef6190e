/**
 * SSP's toy world's frozen helper model: it answers the recipe's RAG-verifier and judge calls
 * (`inference.roles.verifier` and `.judge`, served by the scripted server: test/support/grader-servers.ts) by
 * rule over the world's facts. It writes no prompt of its own: it reads the prompts SSP rendered
 * (`ragVerifierMessages`, `judgeMessages`, parsed back through those very functions), and its answers go
 * through SSP's own parsers (`extractRagAnswer`, `parseVerdict`).
 *
 * Why a grader and not the policy: both calls are the policy's by default, and the warm start teaches neither
 * (a 0.2 M-parameter model taught them would judge its own answers, and a judge that learns alongside the solver
 * is what a learning run must not measure). Verification is routed here as well as the judge, rather than taught
 * in the warm start, because it is a rejection filter SSP never trains on: a rule that reads the question's
 * chain from the materials is the honest and cheap stand-in for a strong frozen reader.
 * - RAG verifier: a question of the world (`parseQuestion`) is answered from the materials alone (the
 *   proposer's own retrieved passages plus the noise blocks), following its town to the founder and, for two
 *   hops, to the birthplace (`answerFromText`); "unknown" when the materials do not hold the chain or the
 *   question is not one the world asks. So a question passes only if its answer is the ground truth AND the
 *   proposer's searches retrieved what answers it, which is what verification is for (ssp.md §1.5).
 * - Judge: called only for answers that normalised exact match missed; "Correct" when the world's names in the
 *   model answer are exactly the reference (the judge prompt's "contains the right answer without conflicting
 *   information"), otherwise "Wrong".
 */
import { SSP_CALLS } from '../../activities/clients/llm-protocol';
import type { ChatMessage } from '../../activities/clients/trainer-contract';
import { judgeMessages, ragVerifierMessages } from '../../activities/recipes/ssp/prompts';
import { squadNormalize } from '../../activities/scoring/cover-exact-match';
import { answerFromText, chains } from './ssp-world';

/** A chat message as the grader reads it: its text only. */
type Prompt = Pick<ChatMessage, 'content'>;

/**
 * A parser of the text a prompt function renders: the function is called with marker slots, and the literal
 * text between them becomes the pattern, so the grader reads exactly the template the recipe wrote.
 */
function templateParser(
  render: (...slots: string[]) => ChatMessage[],
  slots: number,
): (messages: readonly Prompt[]) => string[] | undefined {
  const markers = Array.from({ length: slots }, (_, i) => `\u0000${i}\u0000`);
  const rendered = render(...markers);
  const patterns = rendered.map((m) => {
    const escaped = m.content.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    return new RegExp(`^${markers.reduce((p, marker) => p.replace(marker, '([\\s\\S]*?)'), escaped)}$`);
  });
  return (messages) => {
    if (messages.length !== rendered.length) return undefined;
    const values: string[] = [];
    for (const [i, pattern] of patterns.entries()) {
      const match = pattern.exec(messages[i]?.content ?? '');
      if (!match) return undefined;
      values.push(...match.slice(1));
    }
    return values;
  };
}

const parseJudge = templateParser((q, m, r) => judgeMessages(q ?? '', m ?? '', r ?? ''), 3);
const parseRagVerifier = templateParser((m, q) => ragVerifierMessages(m ?? '', q ?? ''), 2);

export interface SspGrader {
  /** The reply to one call of the world's SSP run (an `SSP_CALLS` value); undefined for an unknown prompt. */
  answer(call: string, messages: readonly Prompt[]): string | undefined;
  /** The calls it answers: RAG verification and both judges. */
  calls: readonly string[];
}

/** The grader of the world of `seed` and `count` chains. */
export function sspGrader(world: { seed: number; chains: number }): SspGrader {
  const names = new Set(
    chains(world.seed, world.chains).flatMap((c) => [c.town, c.founder, c.birthplace].map(squadNormalize)),
  );
  const judge = (messages: readonly Prompt[]): string | undefined => {
    const judged = parseJudge(messages);
    if (!judged) return undefined;
    const [, modelAnswer = '', reference = ''] = judged;
    const named = new Set(
      squadNormalize(modelAnswer)
        .split(' ')
        .filter((w) => names.has(w)),
    );
    const gold = squadNormalize(reference);
    return named.size === 1 && named.has(gold) ? 'Correct' : 'Wrong';
  };
  const verify = (messages: readonly Prompt[]): string | undefined => {
    const verified = parseRagVerifier(messages);
    if (!verified) return undefined;
    const [materials = '', question = ''] = verified;
    const answer = answerFromText(question, materials);
    return answer === undefined
      ? 'The materials do not hold the chain the question asks about.\nAnswer: unknown'
      : `The materials link the question's town to its answer.\nAnswer: ${answer}`;
  };
  const answers: Record<string, (messages: readonly Prompt[]) => string | undefined> = {
    [SSP_CALLS.ragVerifier]: verify,
    [SSP_CALLS.verificationJudge]: judge,
    [SSP_CALLS.judge]: judge,
  };
  return { calls: Object.keys(answers), answer: (call, messages) => answers[call]?.(messages) };
}
