/**
 * The documents an iteration planned from, read back from its committed plan shards, whatever the recipe:
 * a unit names one document (`docId`, SPICE) or carries several (`documents[].id`, segment ids
 * `{docId}#{k}`, SPELL's clusters). Recipes whose units hold no documents (MAE) use none.
 */
export function documentIdsOfUnit(unit: unknown): string[] {
  if (typeof unit !== 'object' || unit === null) return [];
  const { docId, documents } = unit as { docId?: unknown; documents?: unknown };
  const ids = typeof docId === 'string' ? [docId] : [];
  if (Array.isArray(documents)) {
    for (const d of documents) {
      const id = (d as { id?: unknown } | null)?.id;
      if (typeof id === 'string') ids.push(segmentDocId(id));
    }
  }
  return ids;
}

/** `{docId}#{k}` → `docId` (the corpus's segment ids; see corpus.ts). */
function segmentDocId(segmentId: string): string {
  const hash = segmentId.lastIndexOf('#');
  return hash < 0 ? segmentId : segmentId.slice(0, hash);
}
