import type { Corpus } from '../corpus/corpus';

/** One retrievable unit of the index: a window of a document's words, with the document's title. */
export interface IndexedPassage {
  /** `{docId}#p{k}`, k counting the document's passages from 0. */
  id: string;
  docId: string;
  title?: string;
  text: string;
}

/** About the passage size of wiki-18 (the DPR corpus Search-R1 and SSP retrieve from). */
export const DEFAULT_WORDS_PER_PASSAGE = 100;

/**
 * Cuts every kept document of a corpus into passages of `wordsPerPassage` whitespace-separated words, in
 * corpus order. A trailing window shorter than half the size joins the previous one, so no passage is a
 * scrap. The corpus loader has already split long documents into consecutive segments; they are joined
 * back so windows run across segment boundaries.
 */
export function passagesOf(corpus: Corpus, wordsPerPassage = DEFAULT_WORDS_PER_PASSAGE): IndexedPassage[] {
  const out: IndexedPassage[] = [];
  let docId: string | undefined;
  let title: string | undefined;
  let words: string[] = [];
  const flush = (): void => {
    if (docId !== undefined) out.push(...windows(docId, title, words, wordsPerPassage));
  };
  for (const segment of corpus.segments) {
    if (segment.docId !== docId) {
      flush();
      docId = segment.docId;
      const t = segment.metadata.title;
      title = typeof t === 'string' && t.trim() !== '' ? t.trim() : undefined;
      words = [];
    }
    words.push(...segment.text.split(/\s+/).filter((w) => w !== ''));
  }
  flush();
  return out;
}

function windows(docId: string, title: string | undefined, words: string[], size: number): IndexedPassage[] {
  const starts: number[] = [];
  for (let start = 0; start < words.length; start += size) starts.push(start);
  const last = starts.length - 1;
  if (last > 0 && words.length - (starts[last] as number) < size / 2) starts.pop();
  return starts.map((start, k) => ({
    id: `${docId}#p${k}`,
    docId,
    ...(title === undefined ? {} : { title }),
    text: words.slice(start, k === starts.length - 1 ? words.length : start + size).join(' '),
  }));
}
