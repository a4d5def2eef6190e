import type { SearchSyntax } from './types';

/**
 * Reading a search agent's turn: where generation stops, which closing tag the stop sequence cut off, and
 * what the turn asks for (a search, a final answer, or nothing). Model output is untrusted: anything that
 * cannot be read as a search is an invalid call with a reason, never an exception.
 */

/** The tag whose closing form ends a search turn, per syntax. */
const CALL_TAG: Readonly<Record<SearchSyntax, string>> = {
  search_tags: 'search',
  qwen3_tool_call: 'tool_call',
};

/** How a valid call looks, quoted back to the model in the error observation of an invalid one. */
export const CALL_EXAMPLE: Readonly<Record<SearchSyntax, string>> = {
  search_tags: '<search>query</search>',
  qwen3_tool_call: '<tool_call>{"name": "search", "arguments": {"query": "..."}}</tool_call>',
};

/** Longer queries are refused: a model that pours its whole reasoning into a call gets told so. */
const MAX_QUERY_CODE_POINTS = 1000;

export interface SearchCall {
  query: string;
  valid: boolean;
  /** Why an invalid call is invalid, in words the model reads back. */
  problem?: string;
}

type TurnAction =
  | { kind: 'search'; call: SearchCall }
  | { kind: 'final'; tag: string }
  /** The model stopped without a search or a final tag. */
  | { kind: 'none' };

const TAG_NAME = /^[A-Za-z][A-Za-z0-9_-]*$/;

/** Throws for a tag that could not be matched literally (a programming error in a recipe, not model output). */
export function checkTagNames(tags: readonly string[]): void {
  for (const tag of tags) {
    if (!TAG_NAME.test(tag)) throw new Error(`final tag ${JSON.stringify(tag)} is not a plain tag name`);
  }
}

/** The stop sequences of a turn: the call's closing tag, then every final tag's. */
export function stopSequences(syntax: SearchSyntax, finalTags: readonly string[]): string[] {
  return [`</${CALL_TAG[syntax]}>`, ...finalTags.map((t) => `</${t}>`)];
}

/**
 * The turn's text with the closing tag restored that a stop sequence cut off: the tag opened last and never
 * closed. A turn cut by the token limit (`length`) stays as it is: nothing was closed there.
 */
export function closeTurn(
  text: string,
  finishReason: string,
  syntax: SearchSyntax,
  finalTags: readonly string[],
): string {
  if (finishReason === 'length') return text;
  let open: { tag: string; at: number } | undefined;
  for (const tag of [CALL_TAG[syntax], ...finalTags]) {
    const at = text.lastIndexOf(`<${tag}>`);
    if (at >= 0 && at > text.lastIndexOf(`</${tag}>`) && (!open || at > open.at)) open = { tag, at };
  }
  return open ? `${text}</${open.tag}>` : text;
}

/** What a (closed) turn asks for, decided by the closing tag it ends with. */
export function turnAction(text: string, syntax: SearchSyntax, finalTags: readonly string[]): TurnAction {
  const end = text.trimEnd();
  const callTag = CALL_TAG[syntax];
  if (end.endsWith(`</${callTag}>`)) {
    const inner = lastBlock(end, callTag);
    return { kind: 'search', call: syntax === 'search_tags' ? tagQuery(inner) : toolCallQuery(inner) };
  }
  const tag = finalTags.find((t) => end.endsWith(`</${t}>`));
  return tag ? { kind: 'final', tag } : { kind: 'none' };
}

/** The text between the last opening tag and the closing tag that ends `text` (all of it when never opened). */
function lastBlock(text: string, tag: string): string {
  const body = text.slice(0, text.length - `</${tag}>`.length);
  const open = body.lastIndexOf(`<${tag}>`);
  return open >= 0 ? body.slice(open + `<${tag}>`.length) : body;
}

function checked(query: string): SearchCall {
  const q = query.trim();
  if (q === '') return { query: q, valid: false, problem: 'the query is empty' };
  if ([...q].length > MAX_QUERY_CODE_POINTS) {
    return {
      query: q,
      valid: false,
      problem: `the query is longer than ${MAX_QUERY_CODE_POINTS} characters`,
    };
  }
  return { query: q, valid: true };
}

const tagQuery = (inner: string): SearchCall => checked(inner);

/** `{"name": "search", "arguments": {"query": "..."}}`; arguments given as a JSON string are accepted too. */
function toolCallQuery(inner: string): SearchCall {
  const invalid = (problem: string): SearchCall => ({ query: inner.trim(), valid: false, problem });
  const call = parseJson(inner.trim());
  if (!isRecord(call)) return invalid('the tool call is not a JSON object');
  if (call.name !== 'search') return invalid(`unknown tool ${JSON.stringify(call.name ?? null)}`);
  const args = typeof call.arguments === 'string' ? parseJson(call.arguments) : call.arguments;
  if (!isRecord(args) || typeof args.query !== 'string') return invalid('arguments.query is not a string');
  return checked(args.query);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
