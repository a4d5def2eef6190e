import MiniSearch, { type Options } from 'minisearch';
import type { IndexedPassage } from './passages';

/**
 * Lexical ranking with MiniSearch (BM25+ over title and text). Chosen because it is maintained, pure
 * JavaScript with no dependencies, so it installs from npm alone on any machine: SQLite FTS5 packages
 * (better-sqlite3) fetch a prebuilt binary from GitHub or need a native toolchain, and Node 20 has no
 * built-in SQLite. The whole inverted index is held in memory, which suits corpora up to a few million
 * passages.
 */
interface Doc {
  id: number;
  title: string;
  text: string;
}

/** Must be identical when building and when loading: MiniSearch does not serialise its options. */
const OPTIONS: Options<Doc> = {
  fields: ['title', 'text'],
  searchOptions: { boost: { title: 2 }, combineWith: 'OR' },
};

export interface Hit {
  /** The passage's position in the index. */
  index: number;
  score: number;
}

/** The inverted index over `passages`, as the plain object MiniSearch serialises (JSON-safe). */
export function buildBm25(passages: readonly IndexedPassage[]): unknown {
  const search = new MiniSearch<Doc>(OPTIONS);
  passages.forEach((p, id) => search.add({ id, title: p.title ?? '', text: p.text }));
  return search.toJSON();
}

/** A ranker over a serialised index: the top `topK` passages for a query, best first. */
export function bm25Ranker(serialised: unknown): (query: string, topK: number) => Hit[] {
  const search = MiniSearch.loadJS<Doc>(serialised as Parameters<typeof MiniSearch.loadJS>[0], OPTIONS);
  return (query, topK) =>
    search
      .search(query)
      .slice(0, topK)
      .map((r) => ({ index: r.id as number, score: r.score }));
}
