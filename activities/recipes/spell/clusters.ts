import type { CorpusSegment } from '../../corpus/corpus';
import { seedOf } from '../../lib/rng';
import { SPELL_TASKS, type ClusterDocument, type SpellTask } from './records';

/**
 * Document clusters (spell.md §5). The paper clusters by embeddings offline; here a cluster comes from the
 * corpus: a document's `clusterField` names it (any string or finite number), and documents without one are
 * grouped by a hash of their document id into buckets of about `hashClusterSize` (deterministic for a given
 * corpus; adding documents may regroup them). A cluster's "documents" are its corpus segments, in corpus
 * order (a document longer than the segment limit contributes several). A cluster serves the tasks its
 * documents name in `taskField` (the paper gives DocMath clusters to financial math and splits the web
 * clusters between QA and MC); a cluster naming none serves every task.
 */
export interface Cluster {
  id: string;
  documents: ClusterDocument[];
  tasks: SpellTask[];
}

export interface ClusterOptions {
  clusterField: string;
  taskField: string;
  hashClusterSize: number;
}

const HASH_PREFIX = 'hash:';

function metadataCluster(segment: CorpusSegment, field: string): string | undefined {
  const value = segment.metadata[field];
  if (typeof value === 'string' && value.trim() !== '') return value.trim();
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/** Clusters sorted by id, so the plan's draw does not depend on corpus order. */
export function buildClusters(segments: readonly CorpusSegment[], options: ClusterOptions): Cluster[] {
  const unlabelled = new Set(
    segments.filter((s) => metadataCluster(s, options.clusterField) === undefined).map((s) => s.docId),
  );
  const buckets = Math.max(1, Math.round(unlabelled.size / options.hashClusterSize));
  const byId = new Map<string, { documents: ClusterDocument[]; tasks: Set<SpellTask> }>();
  for (const segment of segments) {
    const id =
      metadataCluster(segment, options.clusterField) ??
      `${HASH_PREFIX}${seedOf('spell-cluster', segment.docId) % buckets}`;
    const cluster = byId.get(id) ?? { documents: [], tasks: new Set<SpellTask>() };
    byId.set(id, cluster);
    cluster.documents.push({ id: segment.id, text: segment.text });
    const task = segment.metadata[options.taskField];
    if ((SPELL_TASKS as readonly unknown[]).includes(task)) cluster.tasks.add(task as SpellTask);
  }
  return [...byId.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([id, c]) => ({
      id,
      documents: c.documents,
      tasks: c.tasks.size > 0 ? SPELL_TASKS.filter((t) => c.tasks.has(t)) : [...SPELL_TASKS],
    }));
}
