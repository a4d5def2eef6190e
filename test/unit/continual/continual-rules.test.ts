import { documentIdsOfUnit } from '../../../activities/continual/used-documents';
import { withoutDocuments } from '../../../activities/corpus/exclude';
import type { Corpus } from '../../../activities/corpus/corpus';
import { jobRunId, shouldPromote } from '../../../workflows/continual-rules';

describe('promotion', () => {
  test('only a strictly better score replaces the promoted checkpoint', () => {
    expect(shouldPromote(0.75, 0.5)).toBe(true);
    expect(shouldPromote(0.5, 0.75)).toBe(false);
    expect(shouldPromote(0.5, 0.5)).toBe(false); // a tie keeps the promoted one
    expect(shouldPromote(0, 0)).toBe(false);
  });

  test('without a baseline score the candidate is promoted', () => {
    expect(shouldPromote(0, undefined)).toBe(true);
  });
});

describe('job run ids', () => {
  test('the action time to the second and the head of the Temporal run id, usable as a run id', () => {
    const id = jobRunId('nightly', new Date('2026-11-21T02:00:00.123Z'), '01a1fdcd-b5bb-7185');
    expect(id).toBe('nightly-20261121T020000Z-01a1fdcd');
    expect(id).toMatch(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/);
  });

  test('two starts in the same second get different ids', () => {
    const at = new Date('2026-11-21T02:00:00Z');
    expect(jobRunId('nightly', at, 'aaaaaaaa-1')).not.toBe(jobRunId('nightly', at, 'bbbbbbbb-1'));
  });
});

describe('documents a lineage used', () => {
  test('a unit names its document (SPICE) or a cluster of segments (SPELL); others name none', () => {
    expect(documentIdsOfUnit({ docId: 'doc-1', segmentId: 'doc-1#0' })).toEqual(['doc-1']);
    expect(documentIdsOfUnit({ documents: [{ id: 'doc-2#0' }, { id: 'doc-3#1' }, { id: 'odd' }] })).toEqual([
      'doc-2',
      'doc-3',
      'odd',
    ]);
    expect(documentIdsOfUnit({ question: 'a seed question' })).toEqual([]);
    expect(documentIdsOfUnit(null)).toEqual([]);
  });

  test('excluded documents leave the corpus with all their segments, and are counted', () => {
    const segment = (docId: string, index: number) => ({
      id: `${docId}#${index}`,
      docId,
      index,
      text: 't',
      metadata: {},
    });
    const corpus: Corpus = {
      segments: [segment('a', 0), segment('a', 1), segment('b', 0), segment('c', 0)],
      stats: {
        documents: 3,
        segments: 4,
        skipped: { empty: 1, binary: 0, duplicate: 0, oversized: 0, malformed: 0 },
      },
    };
    const left = withoutDocuments(corpus, new Set(['a', 'c', 'unknown']));
    expect(left.segments.map((s) => s.id)).toEqual(['b#0']);
    expect(left.stats).toEqual({
      documents: 1,
      segments: 1,
      skipped: { empty: 1, binary: 0, duplicate: 0, oversized: 0, malformed: 0, excluded: 2 },
    });
    expect(withoutDocuments(corpus, new Set())).toBe(corpus);
  });
});
