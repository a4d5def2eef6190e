import {
  emptyState,
  entersHistory,
  historyKey,
  pushHistory,
  questionerDocuments,
  readState,
} from '../../../activities/recipes/spell/memory';
import type { ClusterDocument, HistoryEntry } from '../../../activities/recipes/spell/records';
import { seededRng } from '../../../activities/lib/rng';

const cluster: ClusterDocument[] = Array.from({ length: 22 }, (_, i) => ({
  id: `d${i}`,
  text: `document ${i}`,
}));
const entry = (question: string, docs: string[] = []): HistoryEntry => ({ docs, question, answer: 'a' });

describe('questioner context (§1.2, §5)', () => {
  test('without history: m random documents, in index order', () => {
    const docs = questionerDocuments(cluster, [], 5, seededRng('ctx', 1));
    expect(docs).toHaveLength(5);
    expect([...docs].sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)))).toEqual(docs);
  });

  test('grows 5 → 10 → 15 → 20 → 22 as solved questions enter the history, then stays at the cluster', () => {
    const history: HistoryEntry[] = [];
    const sizes: number[] = [];
    for (let step = 0; step < 6; step++) {
      const docs = questionerDocuments(cluster, history, 5, seededRng('ctx', step));
      sizes.push(docs.length);
      // The union of H's sets is always kept.
      for (const id of history.flatMap((h) => h.docs)) expect(docs).toContain(id);
      history.push(entry(`q${step}`, docs));
    }
    expect(sizes).toEqual([5, 10, 15, 20, 22, 22]);
  });

  test('documents that left the cluster are dropped; a small cluster is shown whole', () => {
    const docs = questionerDocuments(cluster.slice(0, 3), [entry('q', ['d1', 'gone'])], 5, seededRng('x'));
    expect(docs).toEqual(['d0', 'd1', 'd2']);
  });
});

describe('history memory (§1, §1.9)', () => {
  test.each([
    ['paper', 0, false],
    ['paper', 0.125, true],
    ['paper', 0.875, true],
    ['paper', 1, false],
    ['code', 0, false],
    ['code', 0.01, true],
    ['code', 1, true],
  ] as const)('%s rule at r̄ = %f: push %s', (rule, r, push) => {
    expect(entersHistory(rule, r)).toBe(push);
  });

  test('a FIFO of L entries per (task, cluster), deduplicated, never mutating the committed state', () => {
    const key = historyKey('general_qa', 'c1');
    const other = historyKey('financial_math', 'c1');
    const committed = pushHistory(emptyState(), [{ key, entry: entry('Q1') }], 3);
    const frozen = JSON.stringify(committed);
    const next = pushHistory(
      committed,
      [
        { key, entry: entry('Q2') },
        { key, entry: entry('  q1 ') }, // the same question again
        { key: other, entry: entry('F1') },
        { key, entry: entry('Q3') },
        { key, entry: entry('Q4') },
      ],
      3,
    );
    expect(next.history[key]?.map((e) => e.question)).toEqual(['Q2', 'Q3', 'Q4']);
    expect(next.history[other]?.map((e) => e.question)).toEqual(['F1']);
    expect(JSON.stringify(committed)).toBe(frozen);
    expect(pushHistory(committed, [{ key, entry: entry('Q9') }], 0).history).toEqual({});
  });

  test('the committed state is checked', () => {
    expect(readState(undefined)).toEqual(emptyState());
    const state = { v: 1, history: { 'general_qa/c': [entry('q')] } };
    expect(readState(state)).toBe(state);
    expect(() => readState({ v: 2, history: {} })).toThrow(/unknown shape/);
    expect(() => readState({ v: 1, history: [] })).toThrow(/unknown shape/);
  });
});
