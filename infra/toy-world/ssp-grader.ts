/**
 * SSP's toy world's frozen helper model: an OpenAI-compatible server that answers the recipe's RAG-verifier
 * and judge calls (`inference.roles.verifier` and `.judge`) by rule over the world's facts. It writes no prompt
 * of its own: it reads the prompts SSP rendered (`ragVerifierMessages`, `judgeMessages`, parsed back through
 * those very functions), and its answers go through SSP's own parsers (`extractRagAnswer`, `parseVerdict`).
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
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChatMessage } from '../../activities/clients/trainer-contract';
import { judgeMessages, ragVerifierMessages } from '../../activities/recipes/ssp/prompts';
import { squadNormalize } from '../../activities/scoring/cover-exact-match';
import { answerFromText, chains } from './ssp-world';

/** The model name the grader serves (any name is answered alike). */
export const SSP_GRADER_MODEL = 'ssp-world-grader';

/**
 * A parser of the text a prompt function renders: the function is called with marker slots, and the literal
 * text between them becomes the pattern, so the grader reads exactly the template the recipe wrote.
 */
function templateParser(
  render: (...slots: string[]) => ChatMessage[],
  slots: number,
): (messages: readonly ChatMessage[]) => string[] | undefined {
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

/** The grader's reply to one chat request of the world's SSP run; undefined for a prompt it does not know. */
export function gradeSspCall(
  messages: readonly ChatMessage[],
  names: ReadonlySet<string>,
): string | undefined {
  const judged = parseJudge(messages);
  if (judged) {
    const [, modelAnswer = '', reference = ''] = judged;
    const named = new Set(
      squadNormalize(modelAnswer)
        .split(' ')
        .filter((w) => names.has(w)),
    );
    const gold = squadNormalize(reference);
    return named.size === 1 && named.has(gold) ? 'Correct' : 'Wrong';
  }
  const verified = parseRagVerifier(messages);
  if (verified) {
    const [materials = '', question = ''] = verified;
    const answer = answerFromText(question, materials);
    return answer === undefined
      ? 'The materials do not hold the chain the question asks about.\nAnswer: unknown'
      : `The materials link the question's town to its answer.\nAnswer: ${answer}`;
  }
  return undefined;
}

export interface SspGrader {
  /** Base URL for an OpenAI client, ending in `/v1`. */
  url: string;
  /** Requests answered, and requests refused because their prompt was not one the grader knows. */
  stats(): { answered: number; unknown: number };
  close(): Promise<void>;
}

/** Starts the grader for the world of `seed` and `count` chains on a free local port. */
export async function startSspGrader(world: { seed: number; chains: number }): Promise<SspGrader> {
  const names = new Set(
    chains(world.seed, world.chains).flatMap((c) => [c.town, c.founder, c.birthplace].map(squadNormalize)),
  );
  const counts = { answered: 0, unknown: 0 };
  const server: Server = createServer((req, res) => {
    const reply = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      reply(404, {
        error: { message: `the SSP grader answers POST /v1/chat/completions only, not ${req.url}` },
      });
      return;
    }
    readBody(req).then(
      (body) => {
        const request = body as { messages?: ChatMessage[]; n?: number; model?: string };
        const content = gradeSspCall(request.messages ?? [], names);
        if (content === undefined) {
          counts.unknown++;
          reply(400, {
            error: {
              message: "the SSP grader answers only the SSP recipe's RAG-verifier and judge prompts",
              type: 'invalid_request_error',
            },
          });
          return;
        }
        counts.answered++;
        reply(200, {
          id: `grader-${counts.answered}`,
          object: 'chat.completion',
          model: request.model ?? SSP_GRADER_MODEL,
          choices: Array.from({ length: request.n ?? 1 }, (_, index) => ({
            index,
            message: { role: 'assistant', content },
            finish_reason: 'stop',
          })),
        });
      },
      (err: unknown) => reply(400, { error: { message: `unreadable request body: ${String(err)}` } }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    stats: () => ({ ...counts }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
}
