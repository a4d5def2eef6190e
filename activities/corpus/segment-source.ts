import type { Corpus, CorpusSegment, CorpusStats } from './corpus';
import type { SegmentIndex } from './segment-index';

/**
 * The segments a plan draws from, by position: a plan asks for the count, draws positions, and reads only those.
 * Positions run over the usable segments (excluded documents left out) in corpus order, so a plan draws the
 * same segments from an index as from the whole corpus in memory.
 */
export interface SegmentSource {
  readonly count: number;
  readonly stats: CorpusStats;
  /** The segments at these positions (0 ≤ p < count), in the order asked; repeats allowed. */
  read(positions: readonly number[]): Promise<CorpusSegment[]>;
}

/** A corpus already in memory (tests, small corpora). */
export function inMemorySegments(corpus: Corpus): SegmentSource {
  return {
    count: corpus.segments.length,
    stats: corpus.stats,
    // A bad position rejects the promise rather than throwing at the call.
    read: (positions) => Promise.resolve().then(() => positions.map((p) => at(corpus.segments, p))),
  };
}

function at(segments: readonly CorpusSegment[], p: number): CorpusSegment {
  const s = segments[p];
  if (!s) throw new RangeError(`segment ${p} is outside the corpus's ${segments.length} segments`);
  return s;
}

/**
 * A stored index less the segments of `excluded` documents. Finding them streams the index's document lists
 * (a few bytes per document) once; what stays in memory is one range per excluded document found.
 */
export async function indexedSegments(
  index: SegmentIndex,
  excluded: ReadonlySet<string>,
): Promise<SegmentSource> {
  const { stats } = index.manifest;
  if (excluded.size === 0) return { count: index.count, stats, read: (positions) => index.read(positions) };
  // [first, count] of each excluded document's segments, in corpus order.
  const gaps: Array<[number, number]> = [];
  for await (const [docId, first, segments] of index.documents()) {
    if (excluded.has(docId)) gaps.push([first, segments]);
  }
  // keptBefore[j]: usable segments before gap j; skipped[j]: segments excluded before it.
  const skipped = [0];
  for (const [, count] of gaps) skipped.push((skipped.at(-1) as number) + count);
  const keptBefore = gaps.map(([first], j) => first - (skipped[j] as number));
  const left = index.count - (skipped.at(-1) as number);
  const toIndex = (p: number): number => {
    if (!Number.isInteger(p) || p < 0 || p >= left) {
      throw new RangeError(`segment ${p} is outside the corpus's ${left} usable segments`);
    }
    // The gaps before p: those with at most p usable segments before them.
    let [lo, hi] = [0, gaps.length];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((keptBefore[mid] as number) <= p) lo = mid + 1;
      else hi = mid;
    }
    return p + (skipped[lo] as number);
  };
  return {
    count: left,
    stats: {
      documents: stats.documents - gaps.length,
      segments: left,
      skipped: { ...stats.skipped, excluded: gaps.length },
    },
    read: (positions) => Promise.resolve().then(() => index.read(positions.map(toIndex))),
  };
}
