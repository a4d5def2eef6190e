import type { ChatRequest, ChatSample, LlmCaller } from '../../activities/clients/inference';
import type { Passage, Retriever, Trajectory, TrajectoryCheckpoint } from '../../activities/tools/types';

/** In-process stand-ins for a search agent's model and retriever, for tests of the loop and of recipes on it. */

/** A model that writes `turns[i]` on its i-th request, cut at the request's first stop string as an engine does. */
export function fakeLlm(turns: Array<string | ChatSample>): { llm: LlmCaller; requests: ChatRequest[] } {
  const requests: ChatRequest[] = [];
  const llm: LlmCaller = {
    chat: (req) => {
      const i = requests.length;
      requests.push(structuredClone({ ...req, signal: undefined }));
      const turn = turns[i];
      if (turn === undefined) return Promise.reject(new Error(`no scripted turn ${i}`));
      if (typeof turn !== 'string') return Promise.resolve([turn]);
      const cut = Math.min(
        ...(req.stop ?? []).map((s) => turn.indexOf(s)).filter((x) => x >= 0),
        turn.length,
      );
      return Promise.resolve([{ content: turn.slice(0, cut), finishReason: 'stop' }]);
    },
  };
  return { llm, requests };
}

/** Passages by query; every query not listed gets one generic passage. */
export function fakeRetriever(answers: Record<string, Passage[]> = {}): Retriever & { queries: string[] } {
  const queries: string[] = [];
  return {
    name: 'fake',
    queries,
    search: (query) => {
      queries.push(query);
      return Promise.resolve(
        answers[query] ?? [{ id: `doc-${query}`, title: query, text: `About ${query}.`, score: 1 }],
      );
    },
  };
}

/**
 * A checkpoint in memory: every saved trajectory in `saved`, `load` giving back the last. Both directions copy,
 * as a store would, so the loop cannot change what was saved by changing the trajectory it goes on with.
 */
export function memoryCheckpoint(): TrajectoryCheckpoint & { saved: Trajectory[] } {
  const saved: Trajectory[] = [];
  return {
    saved,
    load: () => {
      const last = saved.at(-1);
      return Promise.resolve(last && structuredClone(last));
    },
    save: (t) => {
      saved.push(structuredClone(t));
      return Promise.resolve();
    },
  };
}
