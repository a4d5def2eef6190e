import { readObjectAtUri } from '../clients/storage';
import { PermanentReadError } from '../lib/errors';
import type { Corpus } from './corpus';

/**
 * Document exclusion: a stored JSON array of document ids (`corpus.excludeDocIds`) that a run must not plan
 * from, e.g. every document a continual-training lineage has already trained on. The array is read at plan
 * time from an object that is never rewritten, so a retried or resumed plan sees the same set.
 */

/** The ids stored at `uri` (a path or s3://); anything but a JSON array of strings is an error. */
export async function loadExcludedDocIds(uri: string): Promise<ReadonlySet<string>> {
  const text = (await readObjectAtUri(uri)).toString('utf8');
  const ids: unknown = JSON.parse(text);
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) {
    throw new PermanentReadError(`${uri}: expected a JSON array of document ids`);
  }
  return new Set(ids);
}

/** The corpus without the segments of excluded documents; `excluded` counts the documents left out. */
export function withoutDocuments(corpus: Corpus, excluded: ReadonlySet<string>): Corpus {
  if (excluded.size === 0) return corpus;
  const segments = corpus.segments.filter((s) => !excluded.has(s.docId));
  const kept = new Set(segments.map((s) => s.docId));
  const dropped = new Set(corpus.segments.map((s) => s.docId).filter((id) => !kept.has(id)));
  return {
    segments,
    stats: {
      documents: kept.size,
      segments: segments.length,
      skipped: { ...corpus.stats.skipped, excluded: dropped.size },
    },
  };
}
