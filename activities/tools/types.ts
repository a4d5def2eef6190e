import type { SampledTokens } from '../clients/sampled-tokens';
import type { ChatMessage } from '../clients/trainer-contract';
import type { LlmCaller } from '../clients/inference';
import type { StoredValue } from '../clients/storage/codec';

/**
 * The search tool and the multi-turn loop that rollouts run it in (SSP, SCOPE). A retriever answers a query
 * with ranked passages; the loop lets the model alternate between thinking, searching and a final tagged
 * answer, and records which spans of the completion the environment wrote, so the trainer masks them.
 */

/** One retrieved passage, as the model will see it (already cut to the passage token budget). */
export interface Passage {
  /** The corpus document (or chunk) id. */
  id: string;
  title?: string;
  text: string;
  /** The ranker's score; higher is better (BM25 or cosine similarity). */
  score: number;
}

export interface SearchOptions {
  topK: number;
  /** Each passage is cut to at most this many tokens. */
  maxTokens: number;
  signal?: AbortSignal;
}

export interface Retriever {
  /** What answers (e.g. `bm25:s3://bucket/indexes/wiki`), for logs and manifests. */
  readonly name: string;
  search(query: string, options: SearchOptions): Promise<Passage[]>;
}

/**
 * How a model asks for a search: `search_tags` is `<search>query</search>` (Search-R1, Qwen2.5 in SSP and
 * SCOPE); `qwen3_tool_call` is `<tool_call>{"name":"search","arguments":{"query":"…"}}</tool_call>`.
 */
export type SearchSyntax = 'search_tags' | 'qwen3_tool_call';

/** One assistant turn of a trajectory and what the environment answered. */
export interface TrajectoryTurn {
  /** What the model generated in this turn (a closing tag the stop sequence cut off is restored). */
  text: string;
  /** The search the turn asked for; `valid` is false for an empty or unparseable call. */
  search?: { query: string; valid: boolean };
  /** The environment's answer appended after the turn (an `<information>` block or a notice), if any. */
  observation?: string;
  /**
   * What the observation holds: retrieved passages, a short error for an invalid call, or the `searchLimit`
   * notice. Recipes that collect retrieved materials (SSP's RAG verification) read only `results` turns.
   */
  answeredWith?: 'results' | 'error' | 'notice';
  /** Tokens the turn used: its text (as the server counted, else estimated) plus its observation (estimated). */
  tokens?: number;
  finishReason: string;
  /**
   * The ids the model sampled in this turn and their log-probs, when the engine returned them: the trainer
   * takes the turn as these ids, not as `text` (whose restored closing tag the ids already hold).
   */
  sampled?: SampledTokens;
}

export interface Trajectory {
  /** Everything after the prompt, model text and observations interleaved, as one assistant completion. */
  completion: string;
  /**
   * Spans of `completion` the environment wrote (observations), [start, end) in Unicode code points: the
   * trainer excludes them from the loss (TrainingRow.lossMaskSpans).
   */
  lossMaskSpans: Array<[number, number]>;
  turns: TrajectoryTurn[];
  /** Valid queries issued, in order. */
  searches: string[];
  /** Every passage retrieved along the way, in order of retrieval (SSP's RAG verification reads them). */
  passages: Passage[];
  /**
   * Why it ended: a final tag closed, the model stopped without one, a budget ran out, or the next turn's
   * prompt (the trajectory so far) no longer fit the model's context.
   */
  stop: 'final' | 'no_final' | 'max_turns' | 'max_tokens' | 'context_length';
}

/**
 * Where a trajectory's finished turns are kept, so a shard retried on another worker resumes it instead of
 * sampling again. `save` gets the trajectory after every finished turn (overwriting the last); its `stop`
 * says how it would end if no turn followed. The loop resumes from the loaded `turns` and decides again
 * whether more turns are due.
 */
export type TrajectoryCheckpoint = StoredValue<Trajectory>;

export interface SearchLoopSpec {
  llm: LlmCaller;
  retriever: Retriever;
  /** The prompt (system + user); the loop continues one assistant message across turns. */
  messages: ChatMessage[];
  role: string;
  call: string;
  seed: number;
  temperature: number;
  topP: number;
  syntax: SearchSyntax;
  /** Tags that end the trajectory when closed, e.g. `['answer']`, `['question']`, `['task']`. */
  finalTags: string[];
  /** Assistant turns at most (SSP: 10). */
  maxTurns: number;
  /** Completion tokens over the whole trajectory, observations included (SSP: 8192). */
  maxTokens: number;
  topK: number;
  passageTokens: number;
  /** The passages of one search within this many tokens in all (`retrieval.responseTokens`); absent: no cap. */
  responseTokens?: number;
  /**
   * SCOPE's Challenger: after this many searches the environment answers a further search with `notice`
   * ("searches complete") instead of results, so the model writes its task.
   */
  searchLimit?: { after: number; notice: string };
  checkpoint?: TrajectoryCheckpoint;
  signal?: AbortSignal;
}

/**
 * How a recipe's solver searches for one question: its prompt, tool-call syntax, final tags and turn budget.
 * The solve stage and agentic evaluation (`evaluation.rollout: "search"`) both run it, so a benchmark measures
 * the search agent the run trains.
 */
export type SolverSearch = Pick<SearchLoopSpec, 'messages' | 'syntax' | 'finalTags' | 'maxTurns'>;
