import { createHash } from 'node:crypto';
import { z } from 'zod';
import { fieldPath } from '../http-json';

/**
 * The body of `POST /v1/chat/completions` as OpenAI documents it (the fields the project uses, checked;
 * other fields tolerated, as vLLM does), and the fingerprint that tells two identical requests apart from
 * two different ones.
 */

const textPart = z.object({ type: z.literal('text'), text: z.string() });

const message = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: z.union([z.string(), z.array(textPart)]),
});

const chatRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(message).min(1),
  n: z.number().int().min(1).max(128).default(1),
  temperature: z.number().min(0).max(2).optional(),
  top_p: z.number().gt(0).max(1).optional(),
  max_tokens: z.number().int().min(1).optional(),
  seed: z.number().int().optional(),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).optional(),
  stream: z.boolean().optional(),
  // vLLM's and SGLang's chat-template switches: continue the final (assistant) message instead of answering it.
  continue_final_message: z.boolean().optional(),
  add_generation_prompt: z.boolean().optional(),
  // Token in, token out: OpenAI's log-probs, vLLM's and SGLang's `return_token_ids`, vLLM's ids as token names.
  logprobs: z.boolean().optional(),
  return_token_ids: z.boolean().optional(),
  return_tokens_as_token_ids: z.boolean().optional(),
});

export interface ChatTurn {
  role: string;
  content: string;
}

export interface ChatRequest {
  model: string;
  messages: ChatTurn[];
  n: number;
  temperature: number | undefined;
  maxTokens: number | undefined;
  seed: number | undefined;
  stop: string[];
  stream: boolean;
  /** The assistant message the request continues (`continue_final_message`); undefined for a new message. */
  prefix: string | undefined;
  /** What the request asked for beside the text: log-probs, the sampled ids, ids as log-prob token names. */
  tokens: { logprobs: boolean; ids: boolean; idNames: boolean };
}

/** The validated request with text parts joined, or the first problem as `field: message`. */
export function parseChatRequest(
  body: unknown,
): { ok: true; request: ChatRequest } | { ok: false; error: string } {
  const parsed = chatRequestSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, error: `${fieldPath(issue?.path ?? [])}: ${issue?.message ?? 'invalid request'}` };
  }
  const r = parsed.data;
  const last = r.messages.at(-1);
  if (r.continue_final_message && r.add_generation_prompt !== false) {
    // vLLM refuses the pair, since a generation prompt would open a new message after the continued one.
    return { ok: false, error: 'continue_final_message and add_generation_prompt cannot both be true' };
  }
  if (r.continue_final_message && last?.role !== 'assistant') {
    return { ok: false, error: 'continue_final_message: the last message is not an assistant message' };
  }
  const messages = r.messages.map((m) => ({
    role: m.role,
    content: typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join(''),
  }));
  return {
    ok: true,
    request: {
      model: r.model,
      messages,
      n: r.n,
      temperature: r.temperature,
      maxTokens: r.max_tokens,
      seed: r.seed,
      stop: r.stop === undefined ? [] : typeof r.stop === 'string' ? [r.stop] : r.stop,
      stream: r.stream ?? false,
      prefix: r.continue_final_message ? messages.at(-1)?.content : undefined,
      tokens: {
        logprobs: r.logprobs ?? false,
        ids: r.return_token_ids ?? false,
        idNames: r.return_tokens_as_token_ids ?? false,
      },
    },
  };
}

/**
 * sha256 of what decides an answer: call kind, messages, seed, n and whether the last message is continued.
 * A client retry has the same one.
 */
export function fingerprintOf(
  call: string,
  messages: readonly ChatTurn[],
  seed: number | undefined,
  n: number,
  continues = false,
): string {
  const parts: unknown[] = [call, messages.map((m) => [m.role, m.content]), seed ?? null, n];
  const canonical = JSON.stringify(continues ? [...parts, 'continue'] : parts);
  return createHash('sha256').update(canonical).digest('hex');
}
